package lorowasm

import "fmt"

// Heap layout, as wasm-bindgen 0.2.100's glue lays it out: slots 0..127
// are the stack for borrowed values (this glue never uses it), 128..131 the
// constants undefined, null, true, false; the module names them by index.
const (
	heapStack    = 128
	heapReserved = 132
	// maxHeap bounds the values the module may hold at once; past it the
	// call traps instead of growing Go memory without bound.
	maxHeap = 1 << 20
)

// heap is the JS-value heap of one instance.
type heap struct {
	slots []any
	free  []uint32
}

func newHeap() heap {
	s := make([]any, heapStack, 256)
	for i := range s {
		s[i] = Undefined{}
	}
	s = append(s, Undefined{}, Null{}, true, false)
	return heap{slots: s}
}

func (h *heap) add(v any) uint32 {
	if n := len(h.free); n > 0 {
		i := h.free[n-1]
		h.free = h.free[:n-1]
		h.slots[i] = v
		return i
	}
	if len(h.slots) >= maxHeap {
		panic(fmt.Errorf("loro: JS heap exceeds %d values", maxHeap))
	}
	h.slots = append(h.slots, v)
	return uint32(len(h.slots) - 1)
}

func (h *heap) get(i uint32) any {
	if int(i) >= len(h.slots) {
		panic(fmt.Errorf("loro: module named heap slot %d of %d", i, len(h.slots)))
	}
	return h.slots[i]
}

func (h *heap) drop(i uint32) {
	if i < heapReserved || int(i) >= len(h.slots) {
		return
	}
	h.slots[i] = nil
	h.free = append(h.free, i)
}

func (h *heap) take(i uint32) any {
	v := h.get(i)
	h.drop(i)
	return v
}

// live counts the values the module holds (for leak tests).
func (h *heap) live() int { return len(h.slots) - heapReserved - len(h.free) }
