package lorowasm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// ErrTrapped means a call into the module ended abnormally (a Rust panic,
// running out of the memory cap, the call deadline, a JS exception thrown
// through the module). The instance is unusable afterwards: discard it and
// rebuild from persisted bytes.
var ErrTrapped = errors.New("loro: the wasm instance trapped")

// Instance is one instantiation of the module with its JS-value heap. It is
// not safe for concurrent use: callers hold a mutex around it.
type Instance struct {
	rt     *Runtime
	mod    api.Module
	heap   heap
	global *Object
	fns    map[string]api.Function
	broken error
	// retptr is the return area on the module's shadow stack.
	retptr uint32
	// panicMsg is the last console.error line, which is where Loro's panic
	// hook writes the panic message before the module traps.
	panicMsg string
}

// host is the instance as an import sees it: with the context of the call
// it runs in, for calls back into the module.
type host struct {
	*Instance
	ctx context.Context
}

// NewInstance instantiates the module and runs wasm-bindgen's start.
func (r *Runtime) NewInstance(ctx context.Context) (*Instance, error) {
	in := &Instance{rt: r, heap: newHeap(), fns: map[string]api.Function{}}
	in.global = NewObject()
	in.global.Set("crypto", NewObject())
	mod, err := r.rt.InstantiateModule(ctx, r.compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return nil, fmt.Errorf("loro: instantiate: %w", err)
	}
	in.mod = mod
	if _, err := in.Call(ctx, "__wbindgen_start"); err != nil {
		_ = mod.Close(ctx)
		return nil, err
	}
	sp, err := in.Call(ctx, "__wbindgen_add_to_stack_pointer", uint64(uint32(0xFFFFFFF0))) // -16
	if err != nil {
		_ = mod.Close(ctx)
		return nil, err
	}
	in.retptr = uint32(sp[0])
	return in, nil
}

// Close releases the instance.
func (in *Instance) Close(ctx context.Context) error { return in.mod.Close(ctx) }

// Broken returns the trap that ended the instance, or nil.
func (in *Instance) Broken() error { return in.broken }

// MemoryBytes is the size of the instance's linear memory.
func (in *Instance) MemoryBytes() uint32 { return in.mod.Memory().Size() }

// HeapLive counts the JS values the module holds (for leak checks).
func (in *Instance) HeapLive() int { return in.heap.live() }

func (in *Instance) fn(name string) (api.Function, error) {
	f := in.fns[name]
	if f == nil {
		f = in.mod.ExportedFunction(name)
		if f == nil {
			return nil, fmt.Errorf("loro: module has no export %s", name)
		}
		in.fns[name] = f
	}
	return f, nil
}

// Call calls an export. Any abnormal end (including ctx ending, which
// stops the running call) marks the instance broken and returns an error
// wrapping ErrTrapped. The caller bounds ctx; see Runtime.Context.
func (in *Instance) Call(ctx context.Context, name string, args ...uint64) ([]uint64, error) {
	if in.broken != nil {
		return nil, in.broken
	}
	f, err := in.fn(name)
	if err != nil {
		return nil, err
	}
	res, err := f.Call(context.WithValue(ctx, instanceKey{}, in), args...)
	if err != nil {
		msg := in.panicMsg
		if msg != "" {
			msg = " (" + msg + ")"
		}
		in.broken = fmt.Errorf("%w in %s%s: %w", ErrTrapped, name, msg, err)
		_ = in.mod.Close(context.WithoutCancel(ctx))
		return nil, in.broken
	}
	return res, nil
}

// inner calls an export from inside an import; a failure there unwinds the
// outer call as a trap.
func (in host) inner(name string, args ...uint64) []uint64 {
	f, err := in.fn(name)
	if err != nil {
		panic(err)
	}
	res, err := f.Call(in.ctx, args...)
	if err != nil {
		panic(err)
	}
	return res
}

func (in host) exnStore(idx uint32) { in.inner("__wbindgen_exn_store", uint64(idx)) }

func (in *Instance) read(ptr, n uint32) []byte {
	b, ok := in.mod.Memory().Read(ptr, n)
	if !ok {
		panic(fmt.Errorf("loro: module named memory [%d,+%d) outside its %d bytes", ptr, n, in.memSize()))
	}
	return b
}

func (in *Instance) readString(ptr, n uint32) string { return string(in.read(ptr, n)) }

func (in *Instance) writeU32(addr, v uint32) {
	if !in.mod.Memory().WriteUint32Le(addr, v) {
		panic(fmt.Errorf("loro: write outside memory at %d", addr))
	}
}

func (in *Instance) writeU64(addr uint32, v uint64) {
	if !in.mod.Memory().WriteUint64Le(addr, v) {
		panic(fmt.Errorf("loro: write outside memory at %d", addr))
	}
}

// passBytes copies b into memory the module allocates (and then owns).
func (in host) passBytes(b []byte) (ptr, n uint32) {
	res := in.inner("__wbindgen_malloc", uint64(len(b)), 1)
	ptr = uint32(res[0])
	if len(b) > 0 && !in.mod.Memory().Write(ptr, b) {
		panic(fmt.Errorf("loro: malloc returned %d outside memory", ptr))
	}
	return ptr, uint32(len(b))
}

// returnString writes s for the module as wasm-bindgen's
// passStringToWasm0 and the (ptr, len) pair at ret.
func (in host) returnString(ret uint32, s string) {
	ptr, n := in.passBytes([]byte(s))
	in.writeU32(ret, ptr)
	in.writeU32(ret+4, n)
}

func (in host) freeBytes(ptr, n uint32) { in.inner("__wbindgen_free", uint64(ptr), uint64(n), 1) }

func (in host) console(level string, ptr, n uint32, owned bool) {
	msg := in.readString(ptr, n)
	if owned {
		in.freeBytes(ptr, n)
	}
	in.logf(level, msg)
}

func (in *Instance) logf(level, msg string) {
	if level == "error" {
		in.panicMsg = msg
	}
	if l := in.rt.cfg.Logger; l != nil {
		l.Debug("loro wasm console", slog.String("level", level), slog.String("msg", msg))
	}
}
