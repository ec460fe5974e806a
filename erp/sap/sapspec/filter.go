package sapspec

import (
	"fmt"
	"strings"
)

// operand is a checked sub-expression of a $filter.
type operand struct {
	edm  string // its Edm type; "" when not known
	what string // how a message names it: the property path, the literal, the call
	lit  *token // set for a literal
}

func (o operand) describe() string {
	if o.lit != nil {
		return o.lit.text + " (" + o.lit.lit.describe() + ")"
	}
	if o.edm == "" {
		return o.what
	}
	return o.what + " (" + o.edm + ")"
}

// filterFunc is a $filter function: its argument types (a type of "num"
// takes any numeric type, "date" Edm.DateTime or Edm.DateTimeOffset,
// "any" anything), how many of them may be left out, and its result ("="
// for the type of its first argument).
type filterFunc struct {
	args     []string
	optional int
	ret      string
}

var filterFuncs = map[string]filterFunc{
	"substringof": {args: []string{"Edm.String", "Edm.String"}, ret: "Edm.Boolean"},
	"startswith":  {args: []string{"Edm.String", "Edm.String"}, ret: "Edm.Boolean"},
	"endswith":    {args: []string{"Edm.String", "Edm.String"}, ret: "Edm.Boolean"},
	"length":      {args: []string{"Edm.String"}, ret: "Edm.Int32"},
	"indexof":     {args: []string{"Edm.String", "Edm.String"}, ret: "Edm.Int32"},
	"replace":     {args: []string{"Edm.String", "Edm.String", "Edm.String"}, ret: "Edm.String"},
	"substring":   {args: []string{"Edm.String", "Edm.Int32", "Edm.Int32"}, optional: 1, ret: "Edm.String"},
	"tolower":     {args: []string{"Edm.String"}, ret: "Edm.String"},
	"toupper":     {args: []string{"Edm.String"}, ret: "Edm.String"},
	"trim":        {args: []string{"Edm.String"}, ret: "Edm.String"},
	"concat":      {args: []string{"Edm.String", "Edm.String"}, ret: "Edm.String"},
	"year":        {args: []string{"date"}, ret: "Edm.Int32"},
	"month":       {args: []string{"date"}, ret: "Edm.Int32"},
	"day":         {args: []string{"date"}, ret: "Edm.Int32"},
	"hour":        {args: []string{"time"}, ret: "Edm.Int32"},
	"minute":      {args: []string{"time"}, ret: "Edm.Int32"},
	"second":      {args: []string{"time"}, ret: "Edm.Int32"},
	"round":       {args: []string{"num"}, ret: "="},
	"floor":       {args: []string{"num"}, ret: "="},
	"ceiling":     {args: []string{"num"}, ret: "="},
	"isof":        {args: []string{"any", "Edm.String"}, optional: 1, ret: "Edm.Boolean"},
	"cast":        {args: []string{"any", "Edm.String"}, optional: 1, ret: ""},
}

var comparisons = map[string]bool{"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true}
var arithmetic = map[string]bool{"add": true, "sub": true, "mul": true, "div": true, "mod": true}

// filterParser checks one $filter against an entity type: its syntax
// (OData v2: or, and, not, eq ne lt le gt ge, add sub mul div mod,
// parentheses, function calls, member paths through single-valued
// navigation properties, literals) and every property and literal in it.
type filterParser struct {
	svc      *Service
	root     *EntityType
	toks     []token
	i        int
	problems []string
}

// checkFilter returns the mismatches of a $filter, each starting with
// "$filter: ".
func checkFilter(svc *Service, et *EntityType, s string) []string {
	toks, err := lex(s)
	if err != nil {
		return []string{fmt.Sprintf("$filter: %v in %q", err, s)}
	}
	p := &filterParser{svc: svc, root: et, toks: toks}
	e, err := p.or()
	if err == nil && p.peek().kind != tEOF {
		err = p.syntax("an operator or the end")
	}
	if err != nil {
		return []string{fmt.Sprintf("$filter: %v in %q", err, s)}
	}
	p.wantBool(e, "the filter")
	return p.problems
}

func (p *filterParser) peek() token { return p.toks[p.i] }
func (p *filterParser) next() token { t := p.toks[p.i]; p.i++; return t }

func (p *filterParser) syntax(want string) error {
	t := p.peek()
	found := t.text
	if t.kind == tEOF {
		found = "the end"
	}
	return fmt.Errorf("syntax error at %d: want %s, found %s", t.pos, want, found)
}

func (p *filterParser) problem(format string, args ...any) {
	p.problems = append(p.problems, "$filter: "+fmt.Sprintf(format, args...))
}

func (p *filterParser) keyword(words map[string]bool) (string, bool) {
	t := p.peek()
	if t.kind == tIdent && words[t.text] {
		p.i++
		return t.text, true
	}
	return "", false
}

func (p *filterParser) wantBool(e operand, where string) {
	if e.edm != "" && e.edm != "Edm.Boolean" {
		p.problem("%s must be Edm.Boolean, %s is not", where, e.describe())
	}
}

func (p *filterParser) or() (operand, error) {
	left, err := p.and()
	if err != nil {
		return left, err
	}
	for {
		if _, ok := p.keyword(map[string]bool{"or": true}); !ok {
			return left, nil
		}
		right, err := p.and()
		if err != nil {
			return right, err
		}
		p.wantBool(left, "an operand of or")
		p.wantBool(right, "an operand of or")
		left = operand{edm: "Edm.Boolean", what: "(" + left.what + " or " + right.what + ")"}
	}
}

func (p *filterParser) and() (operand, error) {
	left, err := p.not()
	if err != nil {
		return left, err
	}
	for {
		if _, ok := p.keyword(map[string]bool{"and": true}); !ok {
			return left, nil
		}
		right, err := p.not()
		if err != nil {
			return right, err
		}
		p.wantBool(left, "an operand of and")
		p.wantBool(right, "an operand of and")
		left = operand{edm: "Edm.Boolean", what: "(" + left.what + " and " + right.what + ")"}
	}
}

func (p *filterParser) not() (operand, error) {
	if t := p.peek(); t.kind == tIdent && t.text == "not" {
		p.i++
		e, err := p.not()
		if err != nil {
			return e, err
		}
		p.wantBool(e, "the operand of not")
		return operand{edm: "Edm.Boolean", what: "not " + e.what}, nil
	}
	return p.comparison()
}

func (p *filterParser) comparison() (operand, error) {
	left, err := p.additive()
	if err != nil {
		return left, err
	}
	op, ok := p.keyword(comparisons)
	if !ok {
		return left, nil
	}
	right, err := p.additive()
	if err != nil {
		return right, err
	}
	p.compare(left, op, right)
	return operand{edm: "Edm.Boolean", what: left.what + " " + op + " " + right.what}, nil
}

// compare checks that the two sides of a comparison have one type.
func (p *filterParser) compare(left operand, op string, right operand) {
	switch {
	case left.lit != nil && right.lit != nil:
		return
	case right.lit != nil:
		p.fitsLiteral(left, op, *right.lit)
	case left.lit != nil:
		p.fitsLiteral(right, op, *left.lit)
	case left.edm != "" && right.edm != "" && !comparableTypes(left.edm, right.edm):
		p.problem("%s is compared (%s) with %s", left.describe(), op, right.describe())
	}
}

func (p *filterParser) fitsLiteral(side operand, op string, lit token) {
	if side.edm == "" || fits(side.edm, lit.lit) {
		return
	}
	p.problem("%s is compared (%s) with %s (%s); %s is written %s", side.describe(), op, lit.text, lit.lit.describe(),
		side.edm, literalForm(side.edm))
}

func (p *filterParser) additive() (operand, error) {
	left, err := p.unary()
	if err != nil {
		return left, err
	}
	for {
		op, ok := p.keyword(arithmetic)
		if !ok {
			return left, nil
		}
		right, err := p.unary()
		if err != nil {
			return right, err
		}
		for _, e := range []operand{left, right} {
			if e.edm != "" && !numeric(e.edm) {
				p.problem("an operand of %s must be numeric, %s is not", op, e.describe())
			}
		}
		left = operand{edm: left.edm, what: left.what + " " + op + " " + right.what}
	}
}

func (p *filterParser) unary() (operand, error) {
	if p.peek().kind == tMinus {
		p.i++
		e, err := p.unary()
		if err != nil {
			return e, err
		}
		if e.edm != "" && !numeric(e.edm) {
			p.problem("the operand of - must be numeric, %s is not", e.describe())
		}
		return operand{edm: e.edm, what: "-" + e.what}, nil
	}
	return p.primary()
}

func (p *filterParser) primary() (operand, error) {
	t := p.peek()
	switch t.kind {
	case tLParen:
		p.i++
		e, err := p.or()
		if err != nil {
			return e, err
		}
		if p.peek().kind != tRParen {
			return e, p.syntax(")")
		}
		p.i++
		return e, nil
	case tLiteral:
		p.i++
		return operand{edm: t.lit.edm(), what: t.text, lit: &t}, nil
	case tIdent:
		if p.toks[p.i+1].kind == tLParen {
			return p.call()
		}
		return p.member()
	}
	return operand{}, p.syntax("a property, a literal, a function call or (")
}

func (p *filterParser) call() (operand, error) {
	name := p.next().text
	p.i++ // (
	var args []operand
	if p.peek().kind != tRParen {
		for {
			a, err := p.or()
			if err != nil {
				return a, err
			}
			args = append(args, a)
			if p.peek().kind == tComma {
				p.i++
				continue
			}
			break
		}
	}
	if p.peek().kind != tRParen {
		return operand{}, p.syntax(", or )")
	}
	p.i++
	var whats []string
	for _, a := range args {
		whats = append(whats, a.what)
	}
	what := name + "(" + strings.Join(whats, ",") + ")"
	fn, ok := filterFuncs[name]
	if !ok {
		p.problem("%s is not an OData v2 filter function", name)
		return operand{what: what}, nil
	}
	if len(args) > len(fn.args) || len(args) < len(fn.args)-fn.optional {
		want := fmt.Sprint(len(fn.args))
		if fn.optional > 0 {
			want = fmt.Sprintf("%d to %d", len(fn.args)-fn.optional, len(fn.args))
		}
		p.problem("%s takes %s arguments, %s has %d", name, want, what, len(args))
		return operand{edm: fn.ret, what: what}, nil
	}
	for i, a := range args {
		p.argument(name, i+1, fn.args[i], a)
	}
	ret := fn.ret
	if ret == "=" && len(args) > 0 {
		ret = args[0].edm
	}
	return operand{edm: ret, what: what}, nil
}

// argument checks argument n of a call against the type it takes.
func (p *filterParser) argument(fn string, n int, want string, a operand) {
	var ok bool
	switch want {
	case "any":
		return
	case "num":
		ok = a.edm == "" || numeric(a.edm)
	case "date":
		ok = a.edm == "" || a.edm == "Edm.DateTime" || a.edm == "Edm.DateTimeOffset"
	case "time":
		ok = a.edm == "" || a.edm == "Edm.DateTime" || a.edm == "Edm.DateTimeOffset" || a.edm == "Edm.Time"
	default:
		if a.lit != nil {
			ok = fits(want, a.lit.lit)
		} else {
			ok = a.edm == "" || a.edm == want
		}
	}
	if !ok {
		p.problem("argument %d of %s takes %s, %s is not", n, fn, strings.NewReplacer("num", "a number", "date", "a date", "time", "a time").Replace(want), a.describe())
	}
}

// member resolves a property path, Prop or Nav/.../Prop.
func (p *filterParser) member() (operand, error) {
	segs := []string{p.next().text}
	for p.peek().kind == tSlash {
		p.i++
		if p.peek().kind != tIdent {
			return operand{}, p.syntax("a property name after /")
		}
		segs = append(segs, p.next().text)
	}
	what := strings.Join(segs, "/")
	et := p.root
	for i, seg := range segs {
		last := i == len(segs)-1
		if prop := et.Properties[seg]; prop != nil && last {
			if !prop.Filterable {
				p.problem("property %s of %s is not filterable (sap:filterable=\"false\")", seg, et.QualifiedName())
			}
			return operand{edm: prop.Type, what: what}, nil
		}
		nav := et.Navigations[seg]
		if nav == nil {
			p.problem("%s has no property %s", et.QualifiedName(), seg)
			return operand{what: what}, nil
		}
		if nav.Many {
			p.problem("navigation property %s of %s leads to many entities, which an OData v2 filter cannot follow", seg, et.QualifiedName())
			return operand{what: what}, nil
		}
		if last {
			// A single-valued navigation compares only with null.
			return operand{what: what}, nil
		}
		et = p.svc.EntityTypes[nav.Target]
	}
	return operand{what: what}, nil
}
