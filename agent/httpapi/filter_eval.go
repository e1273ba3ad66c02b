package httpapi

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/hashicorp/go-bexpr"
	"github.com/hashicorp/go-bexpr/grammar"
)

// This file evaluates a ?filter as Consul does. Consul's servers run
// go-bexpr v0.1.2, whose selectors go through a list of structs to each
// of its elements: `Checks.Status == "passing"` holds when any check
// passes. Later go-bexpr (the one cairn links) reads `Checks.Status` as
// an index into the list and fails ("couldn't convert value "Status" to
// type int"), which is what Prometheus' health_filter met. So cairn
// parses the expression with go-bexpr's grammar and walks the tree
// itself: selectors are checked against the endpoint's item type when
// the request arrives (an unknown field is a 400 even over an empty
// answer), a selector crossing a list of structs holds when it holds for
// any element, and each comparison is left to go-bexpr, so values are
// coerced to the field's type exactly as go-bexpr does. The collection
// expressions of later go-bexpr (any/all Xs as x { ... }) work as there.

// filterExpr is a ?filter compiled for the items of one endpoint.
type filterExpr struct {
	typ  reflect.Type // the items' type
	root filterNode
}

// filterNode evaluates a part of the expression against an item, with
// the names bound by the enclosing collection expressions.
type filterNode func(item reflect.Value, vars *filterVar) (bool, error)

// filterVar is a name bound by a collection expression, innermost first:
// its value when evaluating, its type when compiling.
type filterVar struct {
	name string
	val  reflect.Value
	typ  reflect.Type
	// leaf is set for an index or a map key, which has no fields.
	leaf bool
	up   *filterVar
}

func (v *filterVar) lookup(name string) *filterVar {
	for ; v != nil; v = v.up {
		if v.name == name {
			return v
		}
	}
	return nil
}

// compileFilter compiles a parsed expression for items of type typ.
func compileFilter(ast grammar.Expression, typ reflect.Type) (*filterExpr, error) {
	fc := &filterCompiler{cmps: make(map[cmpKey]*bexpr.Evaluator)}
	root, err := fc.node(ast, typ, nil)
	if err != nil {
		return nil, err
	}
	return &filterExpr{typ: typ, root: root}, nil
}

// match evaluates the expression against item, which must be of f.typ.
func (f *filterExpr) match(item any) (bool, error) {
	return f.root(reflect.ValueOf(item), nil)
}

// filterCompiler compiles one expression. go-bexpr parses each distinct
// comparison once (some 45 µs each).
type filterCompiler struct {
	cmps map[cmpKey]*bexpr.Evaluator
}

// cmpKey is a comparison: an operator and its value.
type cmpKey struct {
	op  grammar.MatchOperator
	raw string
}

func (fc *filterCompiler) node(e grammar.Expression, typ reflect.Type, vars *filterVar) (filterNode, error) {
	switch n := e.(type) {
	case *grammar.UnaryExpression:
		inner, err := fc.node(n.Operand, typ, vars)
		if err != nil {
			return nil, err
		}
		return func(item reflect.Value, vs *filterVar) (bool, error) {
			ok, err := inner(item, vs)
			return !ok && err == nil, err
		}, nil
	case *grammar.BinaryExpression:
		left, err := fc.node(n.Left, typ, vars)
		if err != nil {
			return nil, err
		}
		right, err := fc.node(n.Right, typ, vars)
		if err != nil {
			return nil, err
		}
		or := n.Operator == grammar.BinaryOpOr
		return func(item reflect.Value, vs *filterVar) (bool, error) {
			ok, err := left(item, vs)
			if err != nil || ok == or { // and: false decides; or: true does
				return ok, err
			}
			return right(item, vs)
		}, nil
	case *grammar.MatchExpression:
		return fc.match(n, typ, vars)
	case *grammar.CollectionExpression:
		return fc.collection(n, typ, vars)
	}
	return nil, fmt.Errorf("unknown expression %T", e)
}

// selectorStart resolves the first name of a selector: a name bound by an
// enclosing collection expression, or a field of the item. It returns the
// bound name (nil for the item), the type to walk from and the rest of
// the path.
func selectorStart(sel grammar.Selector, typ reflect.Type, vars *filterVar) (*filterVar, reflect.Type, []string, error) {
	path := sel.Path
	if len(path) == 0 {
		return nil, nil, nil, fmt.Errorf("empty selector")
	}
	if v := vars.lookup(path[0]); v != nil {
		if v.leaf && len(path) > 1 {
			return nil, nil, nil, fmt.Errorf("selector %q: %s is an index or a key, it has no %q", sel, path[0], path[1])
		}
		return v, v.typ, path[1:], nil
	}
	return nil, typ, path, nil
}

// startValue is the value a selector starting at v (nil for the item)
// walks from.
func startValue(v *filterVar, item reflect.Value, vars *filterVar) reflect.Value {
	if v == nil {
		return item
	}
	return vars.lookup(v.name).val
}

func (fc *filterCompiler) match(m *grammar.MatchExpression, typ reflect.Type, vars *filterVar) (filterNode, error) {
	v, t, path, err := selectorStart(m.Selector, typ, vars)
	if err != nil {
		return nil, err
	}
	if _, err := selectorType(t, path, m.Selector); err != nil {
		return nil, err
	}
	key := cmpKey{op: m.Operator}
	if m.Value != nil {
		key.raw = m.Value.Raw
	}
	cmp := fc.cmps[key]
	if cmp == nil {
		if cmp, err = comparison(m); err != nil {
			return nil, err
		}
		fc.cmps[key] = cmp
	}
	return func(item reflect.Value, vs *filterVar) (bool, error) {
		return walkSelector(startValue(v, item, vs), path, func(val reflect.Value, present bool) (bool, error) {
			if !present {
				return m.Operator.NotPresentDisposition(), nil
			}
			return cmp.Evaluate(map[string]any{"v": val.Interface()})
		})
	}, nil
}

func (fc *filterCompiler) collection(c *grammar.CollectionExpression, typ reflect.Type, vars *filterVar) (filterNode, error) {
	v, t, path, err := selectorStart(c.Selector, typ, vars)
	if err != nil {
		return nil, err
	}
	ct, err := selectorType(t, path, c.Selector)
	if err != nil {
		return nil, err
	}
	ct = derefType(ct)
	b := c.NameBinding
	if b.Mode == grammar.CollectionBindIndexAndValue && b.Index == b.Value {
		return nil, fmt.Errorf("%q cannot be used as a placeholder for both the index and the value", b.Index)
	}
	// The names bound to each element: for a list, Default and Value are
	// the element and Index its position; for a map, Default and Index
	// are the key and Value the element.
	var keyType reflect.Type
	isMap := false
	switch ct.Kind() {
	case reflect.Slice, reflect.Array:
		keyType = reflect.TypeFor[int]()
	case reflect.Map:
		if ct.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("%s can only iterate over maps indexed with strings", c.Op)
		}
		keyType, isMap = ct.Key(), true
	case reflect.Interface:
		return nil, fmt.Errorf("selector %q: cannot iterate over a value of unknown type", c.Selector)
	default:
		return nil, fmt.Errorf("%s is not a list or a map", c.Selector)
	}
	keyNames, valNames := []string{b.Index}, []string{b.Value}
	if isMap {
		keyNames = append(keyNames, b.Default)
	} else {
		valNames = append(valNames, b.Default)
	}
	inner := vars
	for _, n := range keyNames {
		if n != "" {
			inner = &filterVar{name: n, typ: keyType, leaf: true, up: inner}
		}
	}
	for _, n := range valNames {
		if n != "" {
			inner = &filterVar{name: n, typ: ct.Elem(), up: inner}
		}
	}
	body, err := fc.node(c.Inner, typ, inner)
	if err != nil {
		return nil, err
	}
	all := c.Op == grammar.CollectionOpAll
	bind := func(vs *filterVar, key, val reflect.Value) *filterVar {
		for _, n := range keyNames {
			if n != "" {
				vs = &filterVar{name: n, val: key, up: vs}
			}
		}
		for _, n := range valNames {
			if n != "" {
				vs = &filterVar{name: n, val: val, up: vs}
			}
		}
		return vs
	}
	return func(item reflect.Value, vs *filterVar) (bool, error) {
		return walkSelector(startValue(v, item, vs), path, func(coll reflect.Value, present bool) (bool, error) {
			coll = derefValue(coll)
			if !present || !coll.IsValid() {
				return all, nil
			}
			var keys []reflect.Value
			if isMap {
				keys = coll.MapKeys()
			}
			for i := range coll.Len() {
				var key, val reflect.Value
				if isMap {
					key, val = keys[i], coll.MapIndex(keys[i])
				} else {
					key, val = reflect.ValueOf(i), coll.Index(i)
				}
				ok, err := body(item, bind(vs, key, val))
				if err != nil {
					return false, err
				}
				if ok != all { // any: one true decides; all: one false does
					return ok, nil
				}
			}
			return all, nil
		})
	}, nil
}

// selectorType checks that path leads somewhere from t and returns the
// type it reaches. A name after a list of structs (or of maps) selects in
// each element, as Consul's go-bexpr does; a number after a list is an
// index.
func selectorType(t reflect.Type, path []string, sel grammar.Selector) (reflect.Type, error) {
	for len(path) > 0 {
		t = derefType(t)
		part := path[0]
		switch t.Kind() {
		case reflect.Interface:
			return t, nil // known only when evaluating
		case reflect.Struct:
			f, ok := t.FieldByName(part)
			if !ok || !f.IsExported() {
				return nil, fmt.Errorf("selector %q: no field %q", sel, part)
			}
			t = f.Type
		case reflect.Map:
			if t.Key().Kind() != reflect.String {
				return nil, fmt.Errorf("selector %q: cannot index a map with %s keys", sel, t.Key())
			}
			t = t.Elem()
		case reflect.Slice, reflect.Array:
			if _, err := strconv.Atoi(part); err == nil {
				t = t.Elem()
				break
			}
			if k := derefType(t.Elem()).Kind(); k == reflect.Struct || k == reflect.Map {
				t = t.Elem() // part selects in each element
				continue
			}
			return nil, fmt.Errorf("selector %q: %q is not an index into a list of %s", sel, part, derefType(t.Elem()).Kind())
		default:
			return nil, fmt.Errorf("selector %q: a %s has no %q", sel, t.Kind(), part)
		}
		path = path[1:]
	}
	return t, nil
}

// walkSelector follows path from v and calls visit with the value it
// reaches, or with present false when a map has no such key or a list no
// such index. Crossing a list by a name (not an index), it visits what the
// rest of the path reaches in each element, until a visit returns true.
// The path was checked by selectorType.
func walkSelector(v reflect.Value, path []string, visit func(v reflect.Value, present bool) (bool, error)) (bool, error) {
	for ; len(path) > 0; path = path[1:] {
		v = derefValue(v)
		if !v.IsValid() {
			return visit(v, false)
		}
		part := path[0]
		switch v.Kind() {
		case reflect.Struct:
			f := v.FieldByName(part)
			if !f.IsValid() {
				return false, fmt.Errorf("no field %q in %s", part, v.Type())
			}
			v = f
		case reflect.Map:
			v = v.MapIndex(reflect.ValueOf(part).Convert(v.Type().Key()))
			if !v.IsValid() {
				return visit(v, false)
			}
		case reflect.Slice, reflect.Array:
			if i, err := strconv.Atoi(part); err == nil {
				if i < 0 || i >= v.Len() {
					return visit(reflect.Value{}, false)
				}
				v = v.Index(i)
				continue
			}
			for i := range v.Len() {
				if ok, err := walkSelector(v.Index(i), path, visit); ok || err != nil {
					return ok, err
				}
			}
			return false, nil
		default:
			return false, fmt.Errorf("a %s has no %q", v.Kind(), part)
		}
	}
	return visit(v, true)
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// derefValue follows pointers and interfaces; a nil one gives the zero
// Value.
func derefValue(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		v = v.Elem()
	}
	return v
}

// comparison returns go-bexpr's evaluator of m's operator and value
// applied to the selector v: evaluated against {"v": value}, it compares
// value as go-bexpr compares a selected field.
func comparison(m *grammar.MatchExpression) (*bexpr.Evaluator, error) {
	var val string
	if m.Value != nil {
		val = quoteFilterValue(m.Value.Raw)
	}
	var expr string
	switch m.Operator {
	case grammar.MatchEqual:
		expr = "v == " + val
	case grammar.MatchNotEqual:
		expr = "v != " + val
	case grammar.MatchIn:
		expr = val + " in v"
	case grammar.MatchNotIn:
		expr = val + " not in v"
	case grammar.MatchIsEmpty:
		expr = "v is empty"
	case grammar.MatchIsNotEmpty:
		expr = "v is not empty"
	case grammar.MatchMatches:
		expr = "v matches " + val
	case grammar.MatchNotMatches:
		expr = "v not matches " + val
	case grammar.MatchIsNil:
		expr = "v is nil"
	case grammar.MatchIsNotNil:
		expr = "v is not nil"
	case grammar.MatchContains:
		expr = "v contains " + val
	case grammar.MatchNotContains:
		expr = "v not contains " + val
	default:
		return nil, fmt.Errorf("unknown operator %v", m.Operator)
	}
	return bexpr.CreateEvaluator(expr)
}

// quoteFilterValue writes raw as a string literal of the filter grammar:
// raw between backquotes when it holds none, else double-quoted with
// escapes (the grammar ends a double-quoted literal at the first '"', so
// one inside is written \x22).
func quoteFilterValue(raw string) string {
	if !strings.Contains(raw, "`") {
		return "`" + raw + "`"
	}
	return strings.ReplaceAll(strconv.Quote(raw), `\"`, `\x22`)
}
