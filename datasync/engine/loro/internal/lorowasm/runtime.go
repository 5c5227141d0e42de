// Package lorowasm runs Loro's own WebAssembly build (npm loro-crdt 1.13.9,
// pinned and embedded) inside wazero, with the wasm-bindgen JS glue written
// in Go. See docs/decisions/datasync-loro.md.
package lorowasm

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

//go:embed loro_wasm_bg.wasm
var wasmBytes []byte

// Pinned facts about the embedded module.
const (
	// Package is the npm package the module comes from.
	Package = "loro-crdt@1.13.9"
	// Integrity is the npm registry's dist.integrity of that package's tarball.
	Integrity = "sha512-gZYkMy1mqP1wzZqhQ69rNQowOuohLPcLbVQ+MjeJh3dbiXR+XJnbbP1GMxkJ0uBNbRbGmR2w+LazSDQImIJDrw=="
	// Path is the file inside the tarball that is embedded.
	Path = "package/nodejs/loro_wasm_bg.wasm"
	// ImportModule is the module name every import of the wasm carries.
	ImportModule = "__wbindgen_placeholder__"
)

// WasmBytes returns the embedded module.
func WasmBytes() []byte { return wasmBytes }

// Config configures a Runtime.
type Config struct {
	// CacheDir, when set, holds wazero's compilation cache (compiling the
	// module cold takes about a second; from the cache, tens of ms).
	CacheDir string
	// MemoryLimitPages caps each instance's linear memory in 64 KiB pages
	// (0: DefaultMemoryLimitPages). A module that needs more traps.
	MemoryLimitPages uint32
	// CallTimeout bounds one engine operation's calls into the module (0:
	// DefaultCallTimeout); a call past it is ended and the instance is
	// discarded.
	CallTimeout time.Duration
	// Logger receives the module's console output (nil: discarded).
	Logger *slog.Logger
}

// Defaults for Config.
const (
	DefaultMemoryLimitPages = 16384 // 1 GiB
	DefaultCallTimeout      = 2 * time.Minute
)

// Runtime is the compiled module and the Go glue; it makes instances. It
// is safe for concurrent use; instances are not.
type Runtime struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	cfg      Config
}

// ErrUnhandledImport means the module imports a function the Go glue has
// no entry for: the embedded module and the glue are out of step.
var ErrUnhandledImport = errors.New("loro: module import not handled by the Go glue")

type instanceKey struct{}

// NewRuntime compiles the embedded module and instantiates the glue.
func NewRuntime(ctx context.Context, cfg Config) (*Runtime, error) { return newRuntime(ctx, cfg, true) }

// newRuntime is NewRuntime; interruptible false drops wazero's deadline
// watch (for the call-overhead benchmark only).
func newRuntime(ctx context.Context, cfg Config, interruptible bool) (*Runtime, error) {
	if cfg.MemoryLimitPages == 0 {
		cfg.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	rc := wazero.NewRuntimeConfig().WithMemoryLimitPages(cfg.MemoryLimitPages).WithCloseOnContextDone(interruptible)
	if cfg.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("loro: compilation cache: %w", err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	r := &Runtime{rt: rt, cfg: cfg}
	if err := r.init(ctx, glue()); err != nil {
		_ = rt.Close(ctx)
		return nil, err
	}
	return r, nil
}

func (r *Runtime) init(ctx context.Context, table map[string]hostFn) error {
	compiled, err := r.rt.CompileModule(ctx, wasmBytes)
	if err != nil {
		return fmt.Errorf("loro: compile: %w", err)
	}
	r.compiled = compiled
	b := r.rt.NewHostModuleBuilder(ImportModule)
	for _, f := range compiled.ImportedFunctions() {
		mod, name, _ := f.Import()
		fn, ok := table[name]
		if mod != ImportModule || !ok {
			return fmt.Errorf("%w: %s.%s", ErrUnhandledImport, mod, name)
		}
		b.NewFunctionBuilder().WithGoModuleFunction(hostCall(fn), f.ParamTypes(), f.ResultTypes()).Export(name)
	}
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("loro: glue: %w", err)
	}
	return nil
}

// hostCall adapts fn to wazero: the calling instance rides in ctx.
func hostCall(fn hostFn) api.GoModuleFunc {
	return func(ctx context.Context, _ api.Module, stack []uint64) {
		in, _ := ctx.Value(instanceKey{}).(*Instance)
		if in == nil {
			panic("loro: import called outside an instance call")
		}
		fn(host{Instance: in, ctx: ctx}, stack)
	}
}

// Context returns a context bounded by the configured call timeout, for
// one operation's calls into an instance.
func (r *Runtime) Context() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), r.cfg.CallTimeout)
}

// Close releases the runtime and every instance it made.
func (r *Runtime) Close(ctx context.Context) error { return r.rt.Close(ctx) }

// ImportNames lists the module's imports, sorted.
func (r *Runtime) ImportNames() []string {
	var out []string
	for _, f := range r.compiled.ImportedFunctions() {
		_, name, _ := f.Import()
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// GlueNames lists the imports the Go glue handles (implemented or
// deliberately refused), sorted.
func GlueNames() (handled, refusedNames []string) {
	for name := range glue() {
		handled = append(handled, name)
	}
	for name := range refused {
		refusedNames = append(refusedNames, name)
	}
	sort.Strings(handled)
	sort.Strings(refusedNames)
	return handled, refusedNames
}
