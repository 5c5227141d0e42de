package lorowasm

import (
	"math"
	"strconv"
)

// iteratorSymbol is Symbol.iterator.
var iteratorSymbol = Symbol{Name: "Symbol.iterator"}

// getProp is obj[key]. A property read on undefined or null throws.
func getProp(obj, key any) any {
	if sym, ok := key.(Symbol); ok {
		if sym == iteratorSymbol {
			switch obj.(type) {
			case *Array, *Map, *iterator, *Uint8Array:
				return &Func{Name: "[Symbol.iterator]", Call: func(this any, _ []any) any { return iterate(this) }}
			}
		}
		return Undefined{}
	}
	k, ok := propertyKey(key)
	if !ok {
		return Undefined{}
	}
	switch o := obj.(type) {
	case Undefined, Null:
		throw(typeError("Cannot read properties of %s (reading '%s')", toString(o), k))
	case *Object:
		return o.Get(k)
	case *Wrapped:
		if k == "__wbg_ptr" {
			return float64(o.Ptr)
		}
	case *Array:
		if k == "length" {
			return float64(len(o.Elems))
		}
		if i, err := strconv.Atoi(k); err == nil && i >= 0 && i < len(o.Elems) {
			return o.Elems[i]
		}
	case *Uint8Array:
		if k == "length" {
			return float64(o.length())
		}
	case *Error:
		if k == "message" {
			return o.Message
		}
	case *iterator:
		if k == "next" {
			return &Func{Name: "next", Call: func(this any, _ []any) any { return next(this) }}
		}
	case *Map:
		if k == "size" {
			return float64(len(o.Keys))
		}
	}
	return Undefined{}
}

func hasProperty(obj, key any) bool {
	if !isObject(obj) {
		throw(typeError("Cannot use 'in' operator to search for '%s' in %s", toString(key), toString(obj)))
	}
	return !isUndefined(getProp(obj, key))
}

// iterate is obj[Symbol.iterator]().
func iterate(obj any) *iterator {
	switch o := obj.(type) {
	case *Array:
		return &iterator{items: append([]any(nil), o.Elems...)}
	case *Map:
		return mapEntries(o)
	case *iterator:
		return o
	}
	throw(typeError("%s is not iterable", toString(obj)))
	return nil
}

func mapEntries(m *Map) *iterator {
	it := &iterator{}
	for i := range m.Keys {
		it.items = append(it.items, &Array{Elems: []any{m.Keys[i], m.Vals[i]}})
	}
	return it
}

// next is iterator.next().
func next(obj any) *Object {
	it, ok := obj.(*iterator)
	if !ok {
		throw(typeError("next called on a non-iterator"))
	}
	r := NewObject()
	if it.next >= len(it.items) {
		r.Set("done", true)
		r.Set("value", Undefined{})
		return r
	}
	r.Set("done", false)
	r.Set("value", it.items[it.next])
	it.next++
	return r
}

func setProp(obj, key, v any) bool {
	k, ok := propertyKey(key)
	switch o := obj.(type) {
	case *Object:
		if ok {
			o.Set(k, v)
			return true
		}
	case *Array:
		if i, err := strconv.Atoi(k); ok && err == nil && i >= 0 {
			setIndex(o, uint32(i), v)
			return true
		}
	case Undefined, Null:
		throw(typeError("Cannot set properties of %s", toString(o)))
	}
	return false
}

func setIndex(a *Array, i uint32, v any) {
	if int(i) >= maxHeap {
		panic(typeError("array index %d out of bounds", i))
	}
	for len(a.Elems) <= int(i) {
		a.Elems = append(a.Elems, Undefined{})
	}
	a.Elems[i] = v
}

func requireObject(v any, op string) {
	if !isObject(v) && typeOf(v) != "function" {
		throw(typeError("%s called on non-object", op))
	}
}

func callFunc(f any, this any, args []any) any {
	fn, ok := f.(*Func)
	if !ok {
		throw(typeError("%s is not a function", toString(f)))
	}
	return fn.Call(this, args)
}

func arrayArgs(v any) []any {
	a, ok := v.(*Array)
	if !ok {
		throw(typeError("CreateListFromArrayLike called on non-object"))
	}
	return a.Elems
}

func arrayFrom(v any) *Array {
	switch o := v.(type) {
	case *Array:
		return &Array{Elems: append([]any(nil), o.Elems...)}
	case *iterator:
		out := &Array{Elems: append([]any(nil), o.items[o.next:]...)}
		o.next = len(o.items)
		return out
	case *Map:
		return arrayFrom(mapEntries(o))
	}
	return &Array{}
}

func objectEntries(v any) *Array {
	out := &Array{}
	switch o := v.(type) {
	case *Object:
		for _, k := range o.keys {
			out.Elems = append(out.Elems, &Array{Elems: []any{k, o.vals[k]}})
		}
	case *Array:
		for i, e := range o.Elems {
			out.Elems = append(out.Elems, &Array{Elems: []any{strconv.Itoa(i), e}})
		}
	case *Wrapped:
		out.Elems = append(out.Elems, &Array{Elems: []any{"__wbg_ptr", float64(o.Ptr)}})
	case Undefined, Null:
		throw(typeError("Cannot convert undefined or null to object"))
	}
	return out
}

func ownKeys(v any) *Array {
	requireObject(v, "Reflect.ownKeys")
	out := &Array{}
	for _, e := range objectEntries(v).Elems {
		out.Elems = append(out.Elems, e.(*Array).Elems[0])
	}
	if a, ok := v.(*Array); ok {
		_ = a
		out.Elems = append(out.Elems, "length")
	}
	return out
}

func isSafeInteger(v any) bool {
	f, ok := v.(float64)
	return ok && f == math.Trunc(f) && math.Abs(f) <= 1<<53-1
}

func objectGlue() map[string]hostFn {
	heapOf := func(in host, s []uint64, i int) any { return in.heap.get(u32(s[i])) }
	return map[string]hostFn{
		"__wbg_new_405e22f390576ce2": func(in host, s []uint64) { s[0] = uint64(in.heap.add(NewObject())) },
		"__wbg_new_5e0be73521bc8c17": func(in host, s []uint64) { s[0] = uint64(in.heap.add(&Map{})) },
		"__wbg_new_78feb108b6472713": func(in host, s []uint64) { s[0] = uint64(in.heap.add(&Array{})) },
		"__wbg_newwithlength_c4c419ef0bc8a1f8": func(in host, s []uint64) {
			a := &Array{}
			if n := u32(s[0]); n > 0 {
				setIndex(a, n-1, Undefined{})
			}
			s[0] = uint64(in.heap.add(a))
		},
		"__wbg_get_67b2ba62fc30de12": throwing(func(in host, s []uint64) {
			o := heapOf(in, s, 0)
			requireObject(o, "Reflect.get")
			s[0] = uint64(in.heap.add(getProp(o, heapOf(in, s, 1))))
		}),
		"__wbg_set_bb8cecf6a62b9f46": throwing(func(in host, s []uint64) {
			o := heapOf(in, s, 0)
			requireObject(o, "Reflect.set")
			s[0] = b2u(setProp(o, heapOf(in, s, 1), heapOf(in, s, 2)))
		}),
		"__wbg_getwithrefkey_1dc361bd10053bfe": func(in host, s []uint64) {
			s[0] = uint64(in.heap.add(getProp(heapOf(in, s, 0), heapOf(in, s, 1))))
		},
		"__wbg_set_3f1d0b984ed272ed": func(in host, s []uint64) {
			o := heapOf(in, s, 0)
			k, v := in.heap.take(u32(s[1])), in.heap.take(u32(s[2]))
			setProp(o, k, v)
		},
		"__wbg_get_b9b93047fe3cf45b": func(in host, s []uint64) {
			s[0] = uint64(in.heap.add(getProp(heapOf(in, s, 0), float64(u32(s[1])))))
		},
		"__wbg_set_37837023f3d740e8": func(in host, s []uint64) {
			o := heapOf(in, s, 0)
			v := in.heap.take(u32(s[2]))
			if a, ok := o.(*Array); ok {
				setIndex(a, u32(s[1]), v)
			} else {
				setProp(o, float64(u32(s[1])), v)
			}
		},
		"__wbg_length_e2d2a49132c1b256": func(in host, s []uint64) {
			s[0] = uint64(uint32(toNumber(getProp(heapOf(in, s, 0), "length"))))
		},
		"__wbg_push_737cfc8c1432c2c6": func(in host, s []uint64) {
			a, ok := heapOf(in, s, 0).(*Array)
			if !ok {
				throw(typeError("push on a non-array"))
			}
			setIndex(a, uint32(len(a.Elems)), heapOf(in, s, 1))
			s[0] = uint64(len(a.Elems))
		},
		"__wbg_isArray_a1eab7e0d067391b":        predicate(isArray),
		"__wbg_isSafeInteger_343e2beeeece1bb0":  predicate(isSafeInteger),
		"__wbg_instanceof_Map_f3469ce2244d2430": predicate(func(v any) bool { _, ok := v.(*Map); return ok }),
		"__wbg_instanceof_Object_7f2dcef8f78644a4": predicate(func(v any) bool {
			return isObject(v) || typeOf(v) == "function"
		}),
		"__wbg_from_2a5d3e218e67aa85":    objectOp(func(_ host, v any) any { return arrayFrom(v) }),
		"__wbg_entries_3265d4158b33e5dc": objectOp(func(_ host, v any) any { return objectEntries(v) }),
		"__wbg_entries_c8a90a7ed73e84ce": objectOp(func(_ host, v any) any {
			switch o := v.(type) {
			case *Map:
				return mapEntries(o)
			case *Array:
				return iterate(objectEntries(o))
			}
			throw(typeError("entries is not a function"))
			return nil
		}),
		"__wbg_getOwnPropertySymbols_97eebed6fe6e08be": objectOp(func(_ host, v any) any { return &Array{} }),
		"__wbg_ownKeys_3930041068756f1f": throwing(func(in host, s []uint64) {
			s[0] = uint64(in.heap.add(ownKeys(heapOf(in, s, 0))))
		}),
		"__wbg_set_8fc6bf8a5b1071d1": func(in host, s []uint64) {
			m, ok := heapOf(in, s, 0).(*Map)
			if !ok {
				throw(typeError("Map.prototype.set on a non-Map"))
			}
			m.set(heapOf(in, s, 1), heapOf(in, s, 2))
			s[0] = uint64(in.heap.add(m))
		},
		"__wbg_iterator_9a24c88df860dc65": func(in host, s []uint64) { s[0] = uint64(in.heap.add(iteratorSymbol)) },
		"__wbg_next_25feadfc0913fea9":     objectOp(func(_ host, v any) any { return getProp(v, "next") }),
		"__wbg_next_6574e1a8a62d1055": throwing(func(in host, s []uint64) {
			s[0] = uint64(in.heap.add(next(heapOf(in, s, 0))))
		}),
		"__wbg_done_769e5ede4b31c67b": func(in host, s []uint64) {
			s[0] = b2u(truthy(getProp(heapOf(in, s, 0), "done")))
		},
		"__wbg_value_cd1ffa7b1ab794f1": objectOp(func(_ host, v any) any { return getProp(v, "value") }),
		"__wbg_call_672a4d21634d4a24": throwing(func(in host, s []uint64) {
			s[0] = uint64(in.heap.add(callFunc(heapOf(in, s, 0), heapOf(in, s, 1), nil)))
		}),
		"__wbg_call_7cccdd69e0791ae2": throwing(func(in host, s []uint64) {
			s[0] = uint64(in.heap.add(callFunc(heapOf(in, s, 0), heapOf(in, s, 1), []any{heapOf(in, s, 2)})))
		}),
		"__wbg_call_833bed5770ea2041": throwing(func(in host, s []uint64) {
			args := []any{heapOf(in, s, 2), heapOf(in, s, 3)}
			s[0] = uint64(in.heap.add(callFunc(heapOf(in, s, 0), heapOf(in, s, 1), args)))
		}),
		"__wbg_call_b8adc8b1d0a0d8eb": throwing(func(in host, s []uint64) {
			args := []any{heapOf(in, s, 2), heapOf(in, s, 3), heapOf(in, s, 4)}
			s[0] = uint64(in.heap.add(callFunc(heapOf(in, s, 0), heapOf(in, s, 1), args)))
		}),
		"__wbg_apply_36be6a55257c99bf": throwing(func(in host, s []uint64) {
			s[0] = uint64(in.heap.add(callFunc(heapOf(in, s, 0), heapOf(in, s, 1), arrayArgs(heapOf(in, s, 2)))))
		}),
		"__wbg_apply_eb9e9b97497f91e4": throwing(func(in host, s []uint64) {
			s[0] = uint64(in.heap.add(callFunc(heapOf(in, s, 0), heapOf(in, s, 1), arrayArgs(heapOf(in, s, 2)))))
		}),
	}
}
