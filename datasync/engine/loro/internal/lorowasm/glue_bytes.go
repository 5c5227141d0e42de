package lorowasm

func (a *Uint8Array) length() uint32 {
	if a.Mem {
		return a.Len
	}
	return uint32(len(a.Buf))
}

// bytesOf returns the bytes a views: its own, or the module's memory (a
// view past the end of memory is a RangeError).
func (in *Instance) bytesOf(a *Uint8Array) []byte {
	if !a.Mem {
		return a.Buf
	}
	b, ok := in.mod.Memory().Read(a.Off, a.Len)
	if !ok {
		throw(&Error{Message: "RangeError: view outside the module's memory"})
	}
	return b
}

func (in *Instance) memSize() uint32 { return in.mod.Memory().Size() }

func newUint8Array(in host, v any) *Uint8Array {
	switch o := v.(type) {
	case MemoryBuffer:
		return &Uint8Array{Mem: true, Len: in.memSize()}
	case *Uint8Array:
		return &Uint8Array{Buf: append([]byte(nil), in.bytesOf(o)...)}
	case float64:
		return newOwned(uint32(o))
	case *Array:
		b := make([]byte, len(o.Elems))
		for i, e := range o.Elems {
			b[i] = byte(int64(toNumber(e)))
		}
		return &Uint8Array{Buf: b}
	}
	return &Uint8Array{Buf: []byte{}}
}

func newOwned(n uint32) *Uint8Array {
	if n > maxHostBytes {
		panic(typeError("Uint8Array of %d bytes exceeds the glue's bound", n))
	}
	return &Uint8Array{Buf: make([]byte, n)}
}

func asBytes(v any) *Uint8Array {
	a, ok := v.(*Uint8Array)
	if !ok {
		throw(typeError("%s is not a Uint8Array", toString(v)))
	}
	return a
}

// subarray is Uint8Array.prototype.subarray with non-negative bounds.
func subarray(a *Uint8Array, begin, end uint32) *Uint8Array {
	n := a.length()
	end = min(end, n)
	begin = min(begin, end)
	if a.Mem {
		return &Uint8Array{Mem: true, Off: a.Off + begin, Len: end - begin}
	}
	return &Uint8Array{Buf: a.Buf[begin:end:end]}
}

func bytesGlue() map[string]hostFn {
	heapOf := func(in host, s []uint64, i int) any { return in.heap.get(u32(s[i])) }
	return map[string]hostFn{
		"__wbg_buffer_609cc3eee51ed158": objectOp(func(_ host, v any) any {
			switch o := v.(type) {
			case Memory:
				return MemoryBuffer{}
			case *Uint8Array:
				if o.Mem {
					return MemoryBuffer{}
				}
			}
			throw(typeError("buffer of a value the glue does not back"))
			return nil
		}),
		"__wbg_new_a12002a7f91c75be": objectOp(func(in host, v any) any { return newUint8Array(in, v) }),
		"__wbg_newwithbyteoffsetandlength_d97e637ebe145a9a": func(in host, s []uint64) {
			if _, ok := heapOf(in, s, 0).(MemoryBuffer); !ok {
				throw(typeError("Uint8Array over a buffer the glue does not back"))
			}
			s[0] = uint64(in.heap.add(&Uint8Array{Mem: true, Off: u32(s[1]), Len: u32(s[2])}))
		},
		"__wbg_newwithlength_a381634e90c276d4": func(in host, s []uint64) { s[0] = uint64(in.heap.add(newOwned(u32(s[0])))) },
		"__wbg_length_a446193dc22c12f8":        func(in host, s []uint64) { s[0] = uint64(asBytes(heapOf(in, s, 0)).length()) },
		"__wbg_subarray_aa9065fa9dc5df96": func(in host, s []uint64) {
			s[0] = uint64(in.heap.add(subarray(asBytes(heapOf(in, s, 0)), u32(s[1]), u32(s[2]))))
		},
		"__wbg_set_65595bdd868b3009": func(in host, s []uint64) {
			dst := in.bytesOf(asBytes(heapOf(in, s, 0)))
			src := in.bytesOf(asBytes(heapOf(in, s, 1)))
			off := u32(s[2])
			if uint64(off)+uint64(len(src)) > uint64(len(dst)) {
				throw(&Error{Message: "RangeError: offset is out of bounds"})
			}
			copy(dst[off:], src)
		},
		"__wbg_getindex_5b00c274b05714aa": func(in host, s []uint64) {
			b := in.bytesOf(asBytes(heapOf(in, s, 0)))
			i := u32(s[1])
			s[0] = 0
			if int(i) < len(b) {
				s[0] = uint64(b[i])
			}
		},
		"__wbg_setindex_dcd71eabf405bde1": func(in host, s []uint64) {
			b := in.bytesOf(asBytes(heapOf(in, s, 0)))
			if i := u32(s[1]); int(i) < len(b) {
				b[i] = byte(s[2])
			}
		},
		"__wbg_instanceof_Uint8Array_17156bcf118086a9":  predicate(func(v any) bool { _, ok := v.(*Uint8Array); return ok }),
		"__wbg_instanceof_ArrayBuffer_e14585432e3737fc": predicate(func(v any) bool { _, ok := v.(MemoryBuffer); return ok }),
	}
}
