package sapspec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// litKind is the type of an OData v2 URI literal.
type litKind int

const (
	litString litKind = iota
	litDateTime
	litDateTimeOffset
	litTime
	litGuid
	litBinary
	litBoolean
	litNull
	litInt32
	litInt64   // 12L, or digits too large for Edm.Int32
	litDecimal // 1.5M
	litDouble  // 1.5d
	litSingle  // 1.5f
	litFloat   // 1.5 or 1E3 without a suffix: Edm.Decimal or Edm.Double
)

// describe names the literal's type for messages.
func (k litKind) describe() string {
	switch k {
	case litString:
		return "an Edm.String literal"
	case litDateTime:
		return "an Edm.DateTime literal"
	case litDateTimeOffset:
		return "an Edm.DateTimeOffset literal"
	case litTime:
		return "an Edm.Time literal"
	case litGuid:
		return "an Edm.Guid literal"
	case litBinary:
		return "an Edm.Binary literal"
	case litBoolean:
		return "an Edm.Boolean literal"
	case litNull:
		return "null"
	case litInt32:
		return "an Edm.Int32 literal"
	case litInt64:
		return "an Edm.Int64 literal"
	case litDecimal:
		return "an Edm.Decimal literal"
	case litDouble:
		return "an Edm.Double literal"
	case litSingle:
		return "an Edm.Single literal"
	}
	return "an unsuffixed decimal literal"
}

// edm is the Edm type a literal has on its own, for typing expressions.
func (k litKind) edm() string {
	switch k {
	case litString:
		return "Edm.String"
	case litDateTime:
		return "Edm.DateTime"
	case litDateTimeOffset:
		return "Edm.DateTimeOffset"
	case litTime:
		return "Edm.Time"
	case litGuid:
		return "Edm.Guid"
	case litBinary:
		return "Edm.Binary"
	case litBoolean:
		return "Edm.Boolean"
	case litInt32:
		return "Edm.Int32"
	case litInt64:
		return "Edm.Int64"
	case litDecimal, litFloat:
		return "Edm.Decimal"
	case litDouble:
		return "Edm.Double"
	case litSingle:
		return "Edm.Single"
	}
	return ""
}

// literalForm is how a value of an Edm type is written in a URL, for
// messages.
func literalForm(edm string) string {
	switch edm {
	case "Edm.String":
		return "'...'"
	case "Edm.DateTime":
		return "datetime'yyyy-mm-ddThh:mm[:ss]'"
	case "Edm.DateTimeOffset":
		return "datetimeoffset'yyyy-mm-ddThh:mm[:ss]Z'"
	case "Edm.Time":
		return "time'PThhHmmMssS'"
	case "Edm.Guid":
		return "guid'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'"
	case "Edm.Binary":
		return "binary'...' or X'...'"
	case "Edm.Boolean":
		return "true or false"
	case "Edm.Byte", "Edm.SByte", "Edm.Int16", "Edm.Int32":
		return "digits"
	case "Edm.Int64":
		return "digits with L"
	case "Edm.Decimal":
		return "a number with M"
	case "Edm.Double":
		return "a number with d"
	case "Edm.Single":
		return "a number with f"
	}
	return "a literal of " + edm
}

// fits reports whether a literal may stand for a value of the Edm type.
func fits(edm string, k litKind) bool {
	if k == litNull {
		return true
	}
	switch edm {
	case "Edm.String":
		return k == litString
	case "Edm.DateTime":
		return k == litDateTime
	case "Edm.DateTimeOffset":
		return k == litDateTimeOffset
	case "Edm.Time":
		return k == litTime
	case "Edm.Guid":
		return k == litGuid
	case "Edm.Binary":
		return k == litBinary
	case "Edm.Boolean":
		return k == litBoolean
	case "Edm.Byte", "Edm.SByte", "Edm.Int16", "Edm.Int32":
		return k == litInt32
	case "Edm.Int64":
		return k == litInt32 || k == litInt64
	case "Edm.Decimal":
		return k == litInt32 || k == litInt64 || k == litDecimal || k == litFloat
	case "Edm.Double", "Edm.Single":
		return k == litInt32 || k == litInt64 || k == litDecimal || k == litFloat || k == litDouble || k == litSingle
	}
	return false
}

func numeric(edm string) bool {
	switch edm {
	case "Edm.Byte", "Edm.SByte", "Edm.Int16", "Edm.Int32", "Edm.Int64", "Edm.Decimal", "Edm.Double", "Edm.Single":
		return true
	}
	return false
}

// comparableTypes reports whether values of two Edm types can be compared.
func comparableTypes(a, b string) bool {
	return a == b || numeric(a) && numeric(b)
}

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tLiteral
	tLParen
	tRParen
	tComma
	tSlash
	tEquals
	tMinus
)

type token struct {
	kind tokKind
	text string // the token as written
	pos  int    // byte offset in the input
	lit  litKind
}

var (
	reDateTime       = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,7})?)?$`)
	reDateTimeOffset = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,7})?)?(Z|[+-]\d{2}:\d{2})$`)
	reGuid           = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	reTime           = regexp.MustCompile(`^-?P(\d+D)?(T(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$`)
	reHex            = regexp.MustCompile(`^([0-9a-fA-F]{2})*$`)
	reBase64         = regexp.MustCompile(`^[A-Za-z0-9+/]*={0,2}$`)
	reNumber         = regexp.MustCompile(`^-?\d+(\.\d+)?([eE][+-]?\d+)?[MmLlDdFf]?`)
)

// lex splits an OData v2 expression (a $filter, a key predicate) into
// tokens.
func lex(s string) ([]token, error) {
	var out []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c == '(' || c == ')' || c == ',' || c == '/' || c == '=':
			k := map[byte]tokKind{'(': tLParen, ')': tRParen, ',': tComma, '/': tSlash, '=': tEquals}[c]
			out = append(out, token{kind: k, text: string(c), pos: i})
			i++
		case c == '\'':
			text, n, err := quoted(s, i)
			if err != nil {
				return nil, err
			}
			out = append(out, token{kind: tLiteral, text: text, pos: i, lit: litString})
			i += n
		case c >= '0' && c <= '9' || c == '-' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			m := reNumber.FindString(s[i:])
			out = append(out, token{kind: tLiteral, text: m, pos: i, lit: numberKind(m)})
			i += len(m)
		case c == '-':
			out = append(out, token{kind: tMinus, text: "-", pos: i})
			i++
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			word := s[i:j]
			if j < len(s) && s[j] == '\'' {
				text, n, err := quoted(s, j)
				if err != nil {
					return nil, err
				}
				k, err := typedLiteral(word, text)
				if err != nil {
					return nil, fmt.Errorf("at %d: %w", i, err)
				}
				out = append(out, token{kind: tLiteral, text: s[i : j+n], pos: i, lit: k})
				i = j + n
				continue
			}
			switch word {
			case "true", "false":
				out = append(out, token{kind: tLiteral, text: word, pos: i, lit: litBoolean})
			case "null":
				out = append(out, token{kind: tLiteral, text: word, pos: i, lit: litNull})
			default:
				out = append(out, token{kind: tIdent, text: word, pos: i})
			}
			i = j
		default:
			return nil, fmt.Errorf("unexpected %q at %d", c, i)
		}
	}
	return append(out, token{kind: tEOF, pos: len(s)}), nil
}

// quoted reads the quoted text at s[i] (a quote), with ” standing for a
// quote inside; n is its length with the quotes.
func quoted(s string, i int) (text string, n int, err error) {
	for j := i + 1; j < len(s); j++ {
		if s[j] != '\'' {
			continue
		}
		if j+1 < len(s) && s[j+1] == '\'' {
			j++
			continue
		}
		return s[i : j+1], j + 1 - i, nil
	}
	return "", 0, fmt.Errorf("unterminated quote at %d", i)
}

// typedLiteral checks prefix'text' (text with its quotes).
func typedLiteral(prefix, text string) (litKind, error) {
	inner := text[1 : len(text)-1]
	var k litKind
	var re *regexp.Regexp
	switch strings.ToLower(prefix) {
	case "datetime":
		k, re = litDateTime, reDateTime
	case "datetimeoffset":
		k, re = litDateTimeOffset, reDateTimeOffset
	case "guid":
		k, re = litGuid, reGuid
	case "time":
		k, re = litTime, reTime
	case "x":
		k, re = litBinary, reHex
	case "binary":
		k = litBinary
		if reHex.MatchString(inner) || reBase64.MatchString(inner) {
			return k, nil
		}
		return k, fmt.Errorf("malformed binary literal %s%s", prefix, text)
	default:
		return 0, fmt.Errorf("unknown literal prefix %s in %s%s", prefix, prefix, text)
	}
	if !re.MatchString(inner) || inner == "P" || inner == "PT" {
		return k, fmt.Errorf("malformed %s literal %s%s", prefix, prefix, text)
	}
	return k, nil
}

func numberKind(m string) litKind {
	switch m[len(m)-1] {
	case 'M', 'm':
		return litDecimal
	case 'L', 'l':
		return litInt64
	case 'D', 'd':
		return litDouble
	case 'F', 'f':
		return litSingle
	}
	if strings.ContainsAny(m, ".eE") {
		return litFloat
	}
	if _, err := strconv.ParseInt(m, 10, 32); err != nil {
		return litInt64
	}
	return litInt32
}

// literal lexes s as exactly one literal.
func literal(s string) (token, error) {
	toks, err := lex(s)
	if err != nil {
		return token{}, err
	}
	if len(toks) == 2 && toks[0].kind == tLiteral {
		return toks[0], nil
	}
	if len(toks) == 2 && toks[0].kind == tIdent {
		return token{}, fmt.Errorf("%s is not a literal (a string is written in quotes: '%s')", s, s)
	}
	return token{}, fmt.Errorf("%s is not one literal", s)
}
