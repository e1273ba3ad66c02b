package rpc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
)

// This file holds the Server's method table: what Register publishes and
// what both doors (a stream, Server.Call) look a method up in and run.
// It replaces net/rpc's, whose methods take no context.

var (
	contextType = reflect.TypeFor[context.Context]()
	errorType   = reflect.TypeFor[error]()
)

// method is one registered RPC method.
type method struct {
	name  string        // "Service.Method", as callers name it
	rcvr  reflect.Value // the receiver given to Register
	fn    reflect.Value // the method's func, receiver first
	args  reflect.Type  // *A
	reply reflect.Type  // *R
	need  Need          // as declared by the receiver's RPCNeeds
}

// call runs the method with args (a *A) and reply (a *R) in the calling
// goroutine and returns its error as it is.
func (m *method) call(ctx context.Context, args, reply reflect.Value) error {
	out := m.fn.Call([]reflect.Value{m.rcvr, reflect.ValueOf(&ctx).Elem(), args, reply})
	if err, _ := out[0].Interface().(error); err != nil {
		return err
	}
	return nil
}

// values checks the arguments of an in-process call against the method's
// types and returns them as reflect values; a nil reply gets a fresh one,
// which is dropped afterwards, as Pool.Call drops a reply it is not asked
// to decode. A mismatch wraps ErrCodec: the types on the two sides
// disagree, as they do when a reply does not decode.
func (m *method) values(args, reply any) (reflect.Value, reflect.Value, error) {
	a := reflect.ValueOf(args)
	if !a.IsValid() || a.Type() != m.args || a.IsNil() {
		return a, a, fmt.Errorf("%w: args are %s, want a non-nil %s", ErrCodec, describe(args), m.args)
	}
	if reply == nil {
		return a, reflect.New(m.reply.Elem()), nil
	}
	r := reflect.ValueOf(reply)
	if r.Type() != m.reply || r.IsNil() {
		return a, r, fmt.Errorf("%w: reply is %s, want a non-nil %s or nil", ErrCodec, describe(reply), m.reply)
	}
	return a, r, nil
}

// describe names v's type for an error, and says when it is a nil pointer.
func describe(v any) string {
	rv := reflect.ValueOf(v)
	switch {
	case !rv.IsValid():
		return "nil"
	case rv.Kind() == reflect.Pointer && rv.IsNil():
		return fmt.Sprintf("a nil %T", v)
	}
	return fmt.Sprintf("%T", v)
}

// methodTable is the set of registered methods. It is never modified once
// published: Register copies it, so that a lookup takes no lock.
type methodTable struct {
	methods  map[string]*method       // by "Service.Method"
	services map[string]bool          // the registered service names
	streams  map[string]*streamMethod // by "Service.Method" (stream.go)
}

// clone returns a copy of t to add to; nil's is empty.
func (t *methodTable) clone() *methodTable {
	next := &methodTable{methods: map[string]*method{}, services: map[string]bool{}, streams: map[string]*streamMethod{}}
	if t != nil {
		maps.Copy(next.methods, t.methods)
		maps.Copy(next.services, t.services)
		maps.Copy(next.streams, t.streams)
	}
	return next
}

// registry is a Server's methods. lookup may run concurrently with
// register.
type registry struct {
	mu    sync.Mutex // serializes register
	table atomic.Pointer[methodTable]
}

// register publishes the methods of rcvr under name; see Server.Register
// for which methods those are.
func (r *registry) register(name string, rcvr any) error {
	if name == "" || strings.Contains(name, ".") {
		return fmt.Errorf("service name %q: must be non-empty, without a dot", name)
	}
	if rcvr == nil {
		return errors.New("receiver is nil")
	}
	decl, ok := rcvr.(Declared)
	if !ok {
		return fmt.Errorf("type %T does not declare what its methods need (RPCNeeds)", rcvr)
	}
	needs := decl.RPCNeeds()
	v := reflect.ValueOf(rcvr)
	t := v.Type()
	found := map[string]*method{}
	for i := range t.NumMethod() {
		m := t.Method(i)
		ok, err := rpcShape(m.Type)
		if err != nil {
			return fmt.Errorf("method %s.%s has type %s: %w", name, m.Name, withoutReceiver(m.Type), err)
		}
		if !ok {
			continue
		}
		full := name + "." + m.Name
		need := needs[m.Name]
		if err := checkNeed(full, need, m.Type.In(2)); err != nil {
			return err
		}
		found[full] = &method{name: full, rcvr: v, fn: m.Func, args: m.Type.In(2), reply: m.Type.In(3), need: need}
	}
	if len(found) == 0 {
		return fmt.Errorf("type %s has no exported method of the form func(context.Context, *Args, *Reply) error", t)
	}
	for m := range needs {
		if found[name+"."+m] == nil {
			return fmt.Errorf("RPCNeeds of %s declares %q, which is no RPC method of it", t, m)
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.table.Load()
	if old != nil && old.services[name] {
		return fmt.Errorf("service %q is already registered", name)
	}
	next := old.clone()
	for k, m := range found {
		next.methods[k] = m
	}
	next.services[name] = true
	r.table.Store(next)
	return nil
}

// rpcShape reports whether a method's type (receiver first) is that of an
// RPC method, func(context.Context, *A, *R) error. A method that is none
// is skipped, unless it looks like one gone wrong, which is an error so
// that the mistake shows at Register rather than as "can't find method"
// at the first call: it returns error only and takes three arguments, the
// first a context.Context, or it has net/rpc's shape, func(*A, *R) error,
// which a method keeps when it is not given a ctx.
func rpcShape(ft reflect.Type) (ok bool, err error) {
	if ft.NumOut() != 1 || ft.Out(0) != errorType {
		return false, nil
	}
	ptr := func(i int) bool { return ft.In(i).Kind() == reflect.Pointer }
	switch ft.NumIn() - 1 { // without the receiver
	case 3:
		if ft.In(1) != contextType || ft.In(3).Kind() == reflect.Func {
			return false, nil // not a call; a stream method's shape (RegisterStream)
		}
		if !ptr(2) || !ptr(3) {
			return false, errors.New("want func(context.Context, *Args, *Reply) error: args and reply must be pointers")
		}
		return true, nil
	case 2:
		if ptr(1) && ptr(2) {
			return false, errors.New("want func(context.Context, *Args, *Reply) error: the first argument must be the caller's context.Context")
		}
	}
	return false, nil
}

// withoutReceiver prints a method's type as its declaration reads.
func withoutReceiver(ft reflect.Type) string {
	in := make([]string, 0, ft.NumIn())
	for i := 1; i < ft.NumIn(); i++ {
		in = append(in, ft.In(i).String())
	}
	out := make([]string, 0, ft.NumOut())
	for i := range ft.NumOut() {
		out = append(out, ft.Out(i).String())
	}
	s := "func(" + strings.Join(in, ", ") + ")"
	switch len(out) {
	case 0:
		return s
	case 1:
		return s + " " + out[0]
	}
	return s + " (" + strings.Join(out, ", ") + ")"
}

// lookup returns the method named serviceMethod ("Service.Method"). The
// errors are net/rpc's words, which callers may know: they reach the
// caller as a *RemoteError, the server having refused the call.
func (r *registry) lookup(serviceMethod string) (*method, error) {
	if t := r.table.Load(); t != nil {
		if m := t.methods[serviceMethod]; m != nil {
			return m, nil
		}
		dot := strings.LastIndexByte(serviceMethod, '.')
		if dot < 0 {
			return nil, fmt.Errorf("rpc: service/method request ill-formed: %q", serviceMethod)
		}
		if t.services[serviceMethod[:dot]] {
			return nil, fmt.Errorf("rpc: can't find method %q", serviceMethod)
		}
	}
	return nil, fmt.Errorf("rpc: can't find service %q", serviceMethod)
}
