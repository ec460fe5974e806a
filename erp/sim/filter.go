package sim

import (
	"fmt"
	"strings"
	"unicode"
)

// cond is one comparison of a $filter conjunction.
type cond struct {
	field  string
	substr bool // substringof(value, field) eq want
	value  any  // string or bool
	negate bool // ne, or substringof(...) eq false
}

// filter is a conjunction of conditions; the empty filter matches every
// entity.
type filter []cond

// parseFilter reads the $filter subset the simulator supports:
//
//	Field eq 'text' | Field eq true|false | Field ne ...
//	substringof('text',Field) eq true|false
//
// joined by "and", optionally in parentheses.
func parseFilter(src string) (filter, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &filterParser{toks: toks}
	f, err := p.conjunction()
	if err != nil {
		return nil, err
	}
	if !p.done() {
		return nil, fmt.Errorf("unsupported filter expression at %q", p.peek().text)
	}
	return f, nil
}

type tokKind int

const (
	tokIdent tokKind = iota
	tokString
	tokLParen
	tokRParen
	tokComma
)

type token struct {
	kind tokKind
	text string
}

func lex(src string) ([]token, error) {
	var toks []token
	rs := []rune(src)
	for i := 0; i < len(rs); {
		c := rs[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '(':
			toks = append(toks, token{tokLParen, "("})
			i++
		case c == ')':
			toks = append(toks, token{tokRParen, ")"})
			i++
		case c == ',':
			toks = append(toks, token{tokComma, ","})
			i++
		case c == '\'':
			var b strings.Builder
			i++
			for {
				if i >= len(rs) {
					return nil, fmt.Errorf("unterminated string literal")
				}
				if rs[i] == '\'' {
					// OData escapes a quote inside a literal by doubling it.
					if i+1 < len(rs) && rs[i+1] == '\'' {
						b.WriteRune('\'')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteRune(rs[i])
				i++
			}
			toks = append(toks, token{tokString, b.String()})
		case unicode.IsLetter(c) || c == '_':
			j := i
			for j < len(rs) && (unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j]) || rs[j] == '_' || rs[j] == '/') {
				j++
			}
			toks = append(toks, token{tokIdent, string(rs[i:j])})
			i = j
		default:
			return nil, fmt.Errorf("unsupported character %q in filter", c)
		}
	}
	return toks, nil
}

type filterParser struct {
	toks []token
	pos  int
}

func (p *filterParser) done() bool { return p.pos >= len(p.toks) }

func (p *filterParser) peek() token {
	if p.done() {
		return token{kind: -1, text: "<end>"}
	}
	return p.toks[p.pos]
}

func (p *filterParser) next() token {
	t := p.peek()
	p.pos++
	return t
}

func (p *filterParser) expect(kind tokKind, what string) (token, error) {
	t := p.next()
	if t.kind != kind {
		return t, fmt.Errorf("expected %s, found %q", what, t.text)
	}
	return t, nil
}

func (p *filterParser) keyword(word string) bool {
	t := p.peek()
	if t.kind == tokIdent && strings.EqualFold(t.text, word) {
		p.pos++
		return true
	}
	return false
}

func (p *filterParser) conjunction() (filter, error) {
	var f filter
	for {
		c, err := p.term()
		if err != nil {
			return nil, err
		}
		f = append(f, c...)
		if !p.keyword("and") {
			return f, nil
		}
	}
}

func (p *filterParser) term() (filter, error) {
	if p.peek().kind == tokLParen {
		p.next()
		f, err := p.conjunction()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tokRParen, "')'"); err != nil {
			return nil, err
		}
		return f, nil
	}
	if p.keyword("substringof") {
		if _, err := p.expect(tokLParen, "'('"); err != nil {
			return nil, err
		}
		lit, err := p.expect(tokString, "string literal")
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tokComma, "','"); err != nil {
			return nil, err
		}
		fld, err := p.expect(tokIdent, "property name")
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tokRParen, "')'"); err != nil {
			return nil, err
		}
		negate, err := p.comparison()
		if err != nil {
			return nil, err
		}
		want, err := p.literal()
		if err != nil {
			return nil, err
		}
		b, ok := want.(bool)
		if !ok {
			return nil, fmt.Errorf("substringof must be compared with true or false")
		}
		return filter{{field: fld.text, substr: true, value: lit.text, negate: negate == b}}, nil
	}
	fld, err := p.expect(tokIdent, "property name")
	if err != nil {
		return nil, err
	}
	negate, err := p.comparison()
	if err != nil {
		return nil, err
	}
	v, err := p.literal()
	if err != nil {
		return nil, err
	}
	return filter{{field: fld.text, value: v, negate: negate}}, nil
}

// comparison reads eq or ne and reports whether it was ne.
func (p *filterParser) comparison() (bool, error) {
	switch {
	case p.keyword("eq"):
		return false, nil
	case p.keyword("ne"):
		return true, nil
	}
	return false, fmt.Errorf("unsupported operator %q", p.peek().text)
}

func (p *filterParser) literal() (any, error) {
	t := p.next()
	switch {
	case t.kind == tokString:
		return t.text, nil
	case t.kind == tokIdent && t.text == "true":
		return true, nil
	case t.kind == tokIdent && t.text == "false":
		return false, nil
	}
	return nil, fmt.Errorf("unsupported literal %q", t.text)
}

// check verifies the filter against an entity type's properties.
func (f filter) check(template obj) error {
	for _, c := range f {
		v, ok := template.get(c.field)
		if !ok {
			return fmt.Errorf("property %s not found", c.field)
		}
		switch v.(type) {
		case string:
			if _, ok := c.value.(string); !ok {
				return fmt.Errorf("property %s is a string; compare it with a string literal", c.field)
			}
		case bool:
			if c.substr {
				return fmt.Errorf("substringof needs a string property, %s is Edm.Boolean", c.field)
			}
			if _, ok := c.value.(bool); !ok {
				return fmt.Errorf("property %s is Edm.Boolean; compare it with true or false", c.field)
			}
		default:
			return fmt.Errorf("property %s cannot be filtered", c.field)
		}
	}
	return nil
}

// match reports whether the entity satisfies every condition.
func (f filter) match(e obj) bool {
	for _, c := range f {
		v, _ := e.get(c.field)
		var ok bool
		switch got := v.(type) {
		case string:
			want, _ := c.value.(string)
			if c.substr {
				// SAP Gateway compares case-sensitively, as the database
				// does; case-free search is what SearchTerm1, kept in upper
				// case, is for.
				ok = strings.Contains(got, want)
			} else {
				ok = sameValue(c.field, got, want)
			}
		case bool:
			want, _ := c.value.(bool)
			ok = got == want
		}
		if ok == c.negate {
			return false
		}
	}
	return true
}
