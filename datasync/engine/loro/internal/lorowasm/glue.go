package lorowasm

import (
	"crypto/rand"
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// hostFn is one import of the module, reading its parameters from and
// writing its result to the wazero stack.
type hostFn func(in host, s []uint64)

// refused lists imports the glue deliberately does not implement: nothing
// the engine calls reaches them (closures and promises serve subscriptions
// and async APIs). Calling one traps the instance.
var refused = map[string]bool{
	"__wbindgen_closure_wrapper331":  true,
	"__wbindgen_closure_wrapper333":  true,
	"__wbindgen_cb_drop":             true,
	"__wbg_then_44b73946d2fb3e7d":    true,
	"__wbg_resolve_4851785c9c5f573d": true,
}

// maxHostBytes bounds one byte array the module asks the host to make.
const maxHostBytes = 256 << 20

func u32(x uint64) uint32 { return uint32(x) }

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// throwing marks an import the JS glue wraps in handleError: a JS exception
// in it is stored with __wbindgen_exn_store and the call returns 0, instead
// of unwinding the module.
func throwing(f hostFn) hostFn {
	return func(in host, s []uint64) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			t, ok := r.(jsThrow)
			if !ok {
				panic(r)
			}
			in.exnStore(in.heap.add(t.Value))
			if len(s) > 0 {
				s[0] = 0
			}
		}()
		f(in, s)
	}
}

func throw(e *Error) { panic(jsThrow{Value: e}) }

// objectOp returns a host function that applies f to the object at s[0]
// and puts the result on the heap.
func objectOp(f func(in host, v any) any) hostFn {
	return func(in host, s []uint64) { s[0] = uint64(in.heap.add(f(in, in.heap.get(u32(s[0]))))) }
}

func predicate(f func(v any) bool) hostFn {
	return func(in host, s []uint64) { s[0] = b2u(f(in.heap.get(u32(s[0])))) }
}

func wrap(class string) hostFn {
	return func(in host, s []uint64) { s[0] = uint64(in.heap.add(&Wrapped{Class: class, Ptr: u32(s[0])})) }
}

func isNull(v any) bool      { _, ok := v.(Null); return ok }
func isUndefined(v any) bool { _, ok := v.(Undefined); return ok }
func isArray(v any) bool     { _, ok := v.(*Array); return ok }

// glue returns every import the module may call, by its full name.
func glue() map[string]hostFn {
	g := map[string]hostFn{
		// Heap and primitive values.
		"__wbindgen_object_drop_ref":  func(in host, s []uint64) { in.heap.drop(u32(s[0])) },
		"__wbindgen_object_clone_ref": objectOp(func(_ host, v any) any { return v }),
		"__wbindgen_string_new":       func(in host, s []uint64) { s[0] = uint64(in.heap.add(in.readString(u32(s[0]), u32(s[1])))) },
		"__wbindgen_number_new":       func(in host, s []uint64) { s[0] = uint64(in.heap.add(api.DecodeF64(s[0]))) },
		"__wbindgen_bigint_from_i64":  func(in host, s []uint64) { s[0] = uint64(in.heap.add(big.NewInt(int64(s[0])))) },
		"__wbindgen_bigint_from_u64":  func(in host, s []uint64) { s[0] = uint64(in.heap.add(new(big.Int).SetUint64(s[0]))) },
		"__wbindgen_error_new": func(in host, s []uint64) {
			s[0] = uint64(in.heap.add(&Error{Message: in.readString(u32(s[0]), u32(s[1]))}))
		},
		"__wbindgen_memory":            func(in host, s []uint64) { s[0] = uint64(in.heap.add(Memory{})) },
		"__wbindgen_number_get":        numberGet,
		"__wbindgen_string_get":        stringGet,
		"__wbindgen_boolean_get":       booleanGet,
		"__wbindgen_bigint_get_as_i64": bigintGet,
		"__wbindgen_as_number": func(in host, s []uint64) {
			s[0] = api.EncodeF64(toNumber(in.heap.get(u32(s[0]))))
		},
		"__wbindgen_typeof":       objectOp(func(_ host, v any) any { return typeOf(v) }),
		"__wbindgen_is_function":  predicate(func(v any) bool { return typeOf(v) == "function" }),
		"__wbindgen_is_undefined": predicate(isUndefined),
		"__wbindgen_is_null":      predicate(isNull),
		"__wbindgen_is_object":    predicate(isObject),
		"__wbindgen_is_string":    predicate(func(v any) bool { return typeOf(v) == "string" }),
		"__wbindgen_is_bigint":    predicate(func(v any) bool { return typeOf(v) == "bigint" }),
		"__wbindgen_is_array":     predicate(isArray),
		"__wbindgen_is_falsy":     predicate(func(v any) bool { return !truthy(v) }),
		"__wbindgen_jsval_eq": func(in host, s []uint64) {
			s[0] = b2u(strictEqual(in.heap.get(u32(s[0])), in.heap.get(u32(s[1]))))
		},
		"__wbindgen_jsval_loose_eq": func(in host, s []uint64) {
			a, b := in.heap.get(u32(s[0])), in.heap.get(u32(s[1]))
			nullish := func(v any) bool { return isNull(v) || isUndefined(v) }
			s[0] = b2u(strictEqual(a, b) || (nullish(a) && nullish(b)))
		},
		"__wbindgen_in": func(in host, s []uint64) {
			k, o := in.heap.get(u32(s[0])), in.heap.get(u32(s[1]))
			s[0] = b2u(hasProperty(o, k))
		},
		"__wbindgen_debug_string": func(in host, s []uint64) {
			in.returnString(u32(s[0]), debugString(in.heap.get(u32(s[1]))))
		},
		"__wbg_String_8f0eb39a4a4c2f66": func(in host, s []uint64) {
			in.returnString(u32(s[0]), toString(in.heap.get(u32(s[1]))))
		},
		"__wbindgen_throw": func(in host, s []uint64) {
			throw(&Error{Message: in.readString(u32(s[0]), u32(s[1]))})
		},
		"__wbindgen_rethrow": func(in host, s []uint64) { panic(jsThrow{Value: in.heap.take(u32(s[0]))}) },

		// Errors and the console.
		"__wbg_new_8a6f238a6ece86ea": func(in host, s []uint64) { s[0] = uint64(in.heap.add(&Error{})) },
		"__wbg_stack_0ed75d68575b0f3c": func(in host, s []uint64) {
			st := ""
			if e, ok := in.heap.get(u32(s[1])).(*Error); ok {
				st = "Error: " + e.Message
			}
			in.returnString(u32(s[0]), st)
		},
		"__wbg_error_7534b8e9a36f1ab4": func(in host, s []uint64) { in.console("error", u32(s[0]), u32(s[1]), true) },
		"__wbg_error_f6a75ad50e51d222": func(in host, s []uint64) { in.console("error", u32(s[0]), u32(s[1]), false) },
		"__wbg_warn_be76a6bab0e2fef3":  func(in host, s []uint64) { in.console("warn", u32(s[0]), u32(s[1]), false) },
		"__wbg_log_1a3aa82c18462a2b":   func(in host, s []uint64) { in.console("log", u32(s[0]), u32(s[1]), false) },
		"__wbg_log_cb9e190acc5753fb":   func(in host, s []uint64) { in.console("log", u32(s[0]), u32(s[1]), true) },
		"__wbg_log_0cc1b7768397bcfe": func(in host, s []uint64) {
			msg := in.readString(u32(s[0]), u32(s[1])) + " " + in.readString(u32(s[2]), u32(s[3])) + " " +
				in.readString(u32(s[4]), u32(s[5])) + " " + in.readString(u32(s[6]), u32(s[7]))
			in.freeBytes(u32(s[0]), u32(s[1]))
			in.logf("log", msg)
		},
		"__wbg_mark_7438147ce31e9d4b": func(host, []uint64) {},
		"__wbg_measure_fb7825c11612c823": throwing(func(in host, s []uint64) {
			in.freeBytes(u32(s[0]), u32(s[1]))
			in.freeBytes(u32(s[2]), u32(s[3]))
		}),
		"__wbg_now_829357f5fa91c9dd": func(in host, s []uint64) {
			s[0] = api.EncodeF64(float64(time.Now().UnixMilli()))
		},

		// The global object and randomness (getrandom's web-crypto path).
		"__wbg_static_accessor_GLOBAL_THIS_56578be7e9f832b0": func(in host, s []uint64) { s[0] = uint64(in.heap.add(in.global)) },
		"__wbg_static_accessor_GLOBAL_88a902d13a557d07":      func(in host, s []uint64) { s[0] = 0 },
		"__wbg_static_accessor_SELF_37c5d418e4bf5819":        func(in host, s []uint64) { s[0] = 0 },
		"__wbg_static_accessor_WINDOW_5de37043a91a9c40":      func(in host, s []uint64) { s[0] = 0 },
		"__wbg_newnoargs_105ed471475aaf50": func(in host, s []uint64) {
			g := in.global
			s[0] = uint64(in.heap.add(&Func{Name: "anonymous", Call: func(any, []any) any { return g }}))
		},
		"__wbg_crypto_574e78ad8b13b65f":   objectOp(func(in host, v any) any { return getProp(v, "crypto") }),
		"__wbg_msCrypto_a61aeb35a24c1329": objectOp(func(in host, v any) any { return getProp(v, "msCrypto") }),
		"__wbg_process_dc0fbacc7c1c06f7":  objectOp(func(in host, v any) any { return getProp(v, "process") }),
		"__wbg_versions_c01dfd4722a88165": objectOp(func(in host, v any) any { return getProp(v, "versions") }),
		"__wbg_node_905d3e251edff8a2":     objectOp(func(in host, v any) any { return getProp(v, "node") }),
		"__wbg_require_60cc747a6bc5215a":  throwing(func(in host, s []uint64) { s[0] = uint64(in.heap.add(Undefined{})) }),
		"__wbg_getRandomValues_b8f5dbd5f3995a9e": throwing(func(in host, s []uint64) {
			fillRandom(in, in.heap.get(u32(s[1])))
		}),
		"__wbg_randomFillSync_ac0988aba3254290": throwing(func(in host, s []uint64) {
			fillRandom(in, in.heap.take(u32(s[1])))
		}),

		// Wrapped Rust structs.
		"__wbg_cursor_new":          wrap("Cursor"),
		"__wbg_changemodifier_new":  wrap("ChangeModifier"),
		"__wbg_lorocounter_new":     wrap("LoroCounter"),
		"__wbg_lorolist_new":        wrap("LoroList"),
		"__wbg_loromap_new":         wrap("LoroMap"),
		"__wbg_loromovablelist_new": wrap("LoroMovableList"),
		"__wbg_lorotext_new":        wrap("LoroText"),
		"__wbg_lorotree_new":        wrap("LoroTree"),
		"__wbg_lorotreenode_new":    wrap("LoroTreeNode"),
		"__wbg_versionvector_new":   wrap("VersionVector"),
	}
	for name, f := range objectGlue() {
		g[name] = f
	}
	for name, f := range bytesGlue() {
		g[name] = f
	}
	for name := range refused {
		n := name
		g[n] = func(host, []uint64) { panic(fmt.Errorf("loro: the module called %s, which this glue refuses", n)) }
	}
	return g
}

func numberGet(in host, s []uint64) {
	ret := u32(s[0])
	f, ok := in.heap.get(u32(s[1])).(float64)
	in.writeU64(ret+8, math.Float64bits(f))
	in.writeU32(ret, uint32(b2u(ok)))
}

func stringGet(in host, s []uint64) {
	ret := u32(s[0])
	str, ok := in.heap.get(u32(s[1])).(string)
	if !ok {
		in.writeU32(ret, 0)
		in.writeU32(ret+4, 0)
		return
	}
	in.returnString(ret, str)
}

func booleanGet(in host, s []uint64) {
	switch b, ok := in.heap.get(u32(s[0])).(bool); {
	case !ok:
		s[0] = 2
	default:
		s[0] = b2u(b)
	}
}

func bigintGet(in host, s []uint64) {
	ret := u32(s[0])
	b, ok := in.heap.get(u32(s[1])).(*big.Int)
	var v uint64
	if ok {
		// BigInt64 semantics: the value modulo 2^64.
		m := new(big.Int).And(b, new(big.Int).SetUint64(math.MaxUint64))
		v = m.Uint64()
	}
	in.writeU64(ret+8, v)
	in.writeU32(ret, uint32(b2u(ok)))
}

func fillRandom(in host, v any) {
	a, ok := v.(*Uint8Array)
	if !ok {
		throw(typeError("getRandomValues: not a Uint8Array"))
	}
	_, _ = rand.Read(in.bytesOf(a))
}
