// Package wasmcheck holds no code: its test runs Tandem devices against
// memhub on whatever target it is built for. scripts/crossbuild runs it
// under js/wasm through Go's wasm runner on Node 24, where the devices use
// the pure-Go store (tandem/store_pure.go); natively it runs on SQLite.
// docs/decisions/platforms-builds.md.
package wasmcheck
