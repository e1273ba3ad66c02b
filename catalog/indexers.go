package catalog

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-memdb"
)

// fieldIndex indexes a string field of a *T, read by get, with the keys
// and prefixes memdb.StringFieldIndex makes (the value, lowercased when
// Lowercase, then a 0 byte; an empty value has no entry). StringFieldIndex
// finds the field by name through reflection for every index of every
// row, which was a sixth of the time of restoring a snapshot; get is a
// plain read.
type fieldIndex[T any] struct {
	memdb.StringFieldIndex // its Field and Lowercase; its methods are all replaced
	get                    func(*T) string
}

var (
	_ memdb.SingleIndexer = (*fieldIndex[Node])(nil)
	_ memdb.PrefixIndexer = (*fieldIndex[Node])(nil)
)

func newFieldIndex[T any](field string, lowercase bool, get func(*T) string) *fieldIndex[T] {
	return &fieldIndex[T]{StringFieldIndex: memdb.StringFieldIndex{Field: field, Lowercase: lowercase}, get: get}
}

func (f *fieldIndex[T]) FromObject(obj any) (bool, []byte, error) {
	v, err := f.value(obj)
	if err != nil || v == "" {
		return false, nil, err
	}
	return true, appendKey(make([]byte, 0, len(v)+1), v), nil
}

// FromArgs makes the key FromObject makes of a row holding the one
// argument, in one allocation where StringFieldIndex makes two: looking
// up each instance's node is on the path of every health read.
func (f *fieldIndex[T]) FromArgs(args ...any) ([]byte, error) {
	v, err := f.arg(args)
	if err != nil {
		return nil, err
	}
	return appendKey(make([]byte, 0, len(v)+1), v), nil
}

// PrefixFromArgs makes the prefix of the keys of values beginning with the
// one argument, as StringFieldIndex does.
func (f *fieldIndex[T]) PrefixFromArgs(args ...any) ([]byte, error) {
	v, err := f.arg(args)
	return []byte(v), err
}

func (f *fieldIndex[T]) arg(args []any) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("index on %s: got %d arguments, want 1", f.Field, len(args))
	}
	v, ok := args[0].(string)
	if !ok {
		return "", fmt.Errorf("index on %s: argument must be a string: %#v", f.Field, args[0])
	}
	if f.Lowercase {
		v = strings.ToLower(v)
	}
	return v, nil
}

func (f *fieldIndex[T]) value(obj any) (string, error) {
	row, ok := obj.(*T)
	if !ok {
		return "", fmt.Errorf("index on %s: got a %T, want a %T", f.Field, obj, row)
	}
	v := f.get(row)
	if f.Lowercase {
		v = strings.ToLower(v) // no copy when already lowercase
	}
	return v, nil
}

// appendKey appends v and the 0 byte that ends each part of a key.
func appendKey(dst []byte, v string) []byte {
	return append(append(dst, v...), 0)
}

// pairIndex makes the keys and prefixes a memdb.CompoundIndex of two
// fieldIndexes (a node and the row's ID within it) makes, each in one
// allocation where CompoundIndex makes three and two strings.
type pairIndex[T any] struct {
	first, second *fieldIndex[T]
}

var (
	_ memdb.SingleIndexer = (*pairIndex[serviceRow])(nil)
	_ memdb.PrefixIndexer = (*pairIndex[serviceRow])(nil)
)

func newPairIndex[T any](first, second *fieldIndex[T]) *pairIndex[T] {
	return &pairIndex[T]{first: first, second: second}
}

// FromObject leaves out a row missing either part, as CompoundIndex
// without AllowMissing does.
func (p *pairIndex[T]) FromObject(obj any) (bool, []byte, error) {
	a, err := p.first.value(obj)
	if err != nil || a == "" {
		return false, nil, err
	}
	b, err := p.second.value(obj)
	if err != nil || b == "" {
		return false, nil, err
	}
	return true, appendKey(appendKey(make([]byte, 0, len(a)+len(b)+2), a), b), nil
}

// FromArgs makes the key of one row, given its node and ID; the key is the
// one FromObject makes of that row, built in one allocation.
func (p *pairIndex[T]) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("index on %s and %s: got %d arguments, want 2", p.first.Field, p.second.Field, len(args))
	}
	a, b, err := p.args(args[0], args[1])
	if err != nil {
		return nil, err
	}
	return appendKey(appendKey(make([]byte, 0, len(a)+len(b)+2), a), b), nil
}

// PrefixFromArgs makes the prefix of the keys that begin with a node's name
// (one argument: "web" is a prefix of "web2" too), or with a whole node name
// and a prefix of the ID (two), as CompoundIndex does, in one allocation:
// finding a node's checks is on the path of every health read.
func (p *pairIndex[T]) PrefixFromArgs(args ...any) ([]byte, error) {
	switch len(args) {
	case 0: // every key, as CompoundIndex has it
		return nil, nil
	case 1:
		a, _, err := p.args(args[0], "")
		return []byte(a), err
	case 2:
		a, b, err := p.args(args[0], args[1])
		if err != nil {
			return nil, err
		}
		return append(appendKey(make([]byte, 0, len(a)+len(b)+1), a), b...), nil
	}
	return nil, fmt.Errorf("index on %s and %s: got %d arguments, want at most 2", p.first.Field, p.second.Field, len(args))
}

// args checks that both arguments are strings and lowercases them as the
// fields' indexes do.
func (p *pairIndex[T]) args(x, y any) (string, string, error) {
	a, err := p.first.arg([]any{x})
	if err != nil {
		return "", "", err
	}
	b, err := p.second.arg([]any{y})
	return a, b, err
}
