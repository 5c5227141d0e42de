package lorowasm

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
)

// The JS values the glue hands to the module. wasm-bindgen's generated
// JavaScript keeps every value the module holds in a heap array and passes
// its index; Heap does the same with these Go types:
//
//	Undefined, Null         the two empty values
//	bool, float64, string   booleans, numbers, strings
//	*big.Int                BigInt
//	*Object, *Array, *Map   plain objects (string keys), arrays, Maps
//	*Uint8Array             owned bytes, or a view of the module's memory
//	*Error                  an Error (from the module, or a host failure)
//	*Func                   a callable (iterators, the global fallback)
//	*Wrapped                an exported Rust struct handed out by pointer
//	Symbol, MemoryBuffer    Symbol.iterator; the module's memory buffer
type (
	// Undefined is JS undefined.
	Undefined struct{}
	// Null is JS null.
	Null struct{}
	// Symbol is a JS symbol (only Symbol.iterator is ever made).
	Symbol struct{ Name string }
	// MemoryBuffer is the ArrayBuffer behind the module's linear memory.
	MemoryBuffer struct{}
	// Memory is WebAssembly.Memory (the module's own).
	Memory struct{}
)

// Object is a plain JS object with string keys in insertion order.
type Object struct {
	keys []string
	vals map[string]any
}

// NewObject returns an empty object.
func NewObject() *Object { return &Object{vals: map[string]any{}} }

// Set sets key to v, keeping first-insertion order.
func (o *Object) Set(key string, v any) {
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
}

// Get returns the value under key, Undefined when absent.
func (o *Object) Get(key string) any {
	if v, ok := o.vals[key]; ok {
		return v
	}
	return Undefined{}
}

// Keys returns the keys in order.
func (o *Object) Keys() []string { return append([]string(nil), o.keys...) }

// Array is a JS array.
type Array struct{ Elems []any }

// Map is a JS Map; keys compare with SameValueZero.
type Map struct {
	Keys []any
	Vals []any
}

func (m *Map) set(k, v any) {
	for i, x := range m.Keys {
		if strictEqual(x, k) {
			m.Vals[i] = v
			return
		}
	}
	m.Keys = append(m.Keys, k)
	m.Vals = append(m.Vals, v)
}

// Uint8Array is owned bytes, or (Mem) a view of Len bytes of the module's
// memory at Off, read through when used.
type Uint8Array struct {
	Mem      bool
	Buf      []byte
	Off, Len uint32
}

// Error is a JS Error.
type Error struct{ Message string }

func (e *Error) Error() string { return e.Message }

// Func is a JS function the glue can call.
type Func struct {
	Name string
	Call func(this any, args []any) any
}

// Wrapped is an exported Rust struct: the JS class wrapper wasm-bindgen
// makes around a pointer (its only property is __wbg_ptr).
type Wrapped struct {
	Class string
	Ptr   uint32
}

// iterator is a JS iterator over a fixed list of values.
type iterator struct {
	items []any
	next  int
}

// typeOf is JS typeof.
func typeOf(v any) string {
	switch v.(type) {
	case Undefined:
		return "undefined"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case *big.Int:
		return "bigint"
	case Symbol:
		return "symbol"
	case *Func:
		return "function"
	}
	return "object"
}

func isObject(v any) bool { _, n := v.(Null); return typeOf(v) == "object" && !n }

// strictEqual is JS ===.
func strictEqual(a, b any) bool {
	switch x := a.(type) {
	case *big.Int:
		y, ok := b.(*big.Int)
		return ok && x.Cmp(y) == 0
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	}
	return a == b
}

// truthy is JS ToBoolean.
func truthy(v any) bool {
	switch x := v.(type) {
	case Undefined, Null:
		return false
	case bool:
		return x
	case float64:
		return x != 0 && !math.IsNaN(x)
	case string:
		return x != ""
	case *big.Int:
		return x.Sign() != 0
	}
	return true
}

// toNumber is JS unary plus for the values the module can hold.
func toNumber(v any) float64 {
	switch x := v.(type) {
	case bool:
		if x {
			return 1
		}
		return 0
	case float64:
		return x
	case Null:
		return 0
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	return math.NaN()
}

// toString is JS String(v) for the values the module can hold.
func toString(v any) string {
	switch x := v.(type) {
	case Undefined:
		return "undefined"
	case Null:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return formatNumber(x)
	case string:
		return x
	case *big.Int:
		return x.String()
	case *Error:
		return "Error: " + x.Message
	case *Array:
		s := ""
		for i, e := range x.Elems {
			if i > 0 {
				s += ","
			}
			switch e.(type) {
			case Undefined, Null:
			default:
				s += toString(e)
			}
		}
		return s
	case *Func:
		return "function " + x.Name + "() { [native code] }"
	case *Wrapped:
		return "[object " + x.Class + "]"
	}
	return "[object Object]"
}

func formatNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == math.Trunc(f) && math.Abs(f) < 1e21:
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// debugString is wasm-bindgen's debugString, enough for error messages.
func debugString(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case *Array:
		s := "["
		for i, e := range x.Elems {
			if i > 0 {
				s += ", "
			}
			s += debugString(e)
		}
		return s + "]"
	case *Object:
		return "Object"
	case *Error:
		return "Error: " + x.Message
	case *Map:
		return "Map"
	case *Uint8Array:
		return "Uint8Array"
	case Symbol:
		return "Symbol(" + x.Name + ")"
	}
	return toString(v)
}

// propertyKey is JS ToPropertyKey for string and number keys.
func propertyKey(k any) (string, bool) {
	switch x := k.(type) {
	case string:
		return x, true
	case float64:
		return formatNumber(x), true
	}
	return "", false
}

// jsThrow is a JS exception thrown through the module (wasm-bindgen's
// __wbindgen_throw and __wbindgen_rethrow): it ends the call.
type jsThrow struct{ Value any }

func (t jsThrow) Error() string { return "loro: JS exception: " + toString(t.Value) }

// typeError is the exception a JS operation on a wrong value throws.
func typeError(format string, args ...any) *Error {
	return &Error{Message: "TypeError: " + fmt.Sprintf(format, args...)}
}
