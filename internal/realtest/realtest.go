// Package realtest is what Ferry's tests against real servers and real
// packages (Dovecot, Cyrus, the Evolu npm packages) share: one rule for a
// server that is not there, and one way to find the variables that
// scripts/setup.d wrote.
//
// The rule: when FERRY_REQUIRE_REAL=1 (scripts/test and CI set it), a test
// whose server is missing fails; otherwise it is skipped, so that a plain
// `go test ./...` on a laptop without the servers still runs everything else.
package realtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Required reports whether FERRY_REQUIRE_REAL=1: a missing real server or
// package is then a failure, not a skip.
func Required() bool { return os.Getenv("FERRY_REQUIRE_REAL") == "1" }

// Unavailable ends tb because a real server or package it needs is missing:
// with Fatal when Required, else with Skip. why says what is missing and
// how to get it.
func Unavailable(tb testing.TB, why string) {
	tb.Helper()
	if Required() {
		tb.Fatalf("real server required (FERRY_REQUIRE_REAL=1): %s", why)
		return
	}
	tb.Skipf("no real server: %s", why)
}

// Getenv returns the variable key from the process environment or, when it
// is unset there, from the KEY=VALUE files that scripts/setup.d wrote into
// $FERRY_CACHE/env.d (FERRY_CACHE defaults to <module root>/.cache). It
// returns "" when neither has it.
func Getenv(key string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	dir := os.Getenv("FERRY_CACHE")
	if dir == "" {
		root, ok := moduleRoot()
		if !ok {
			return ""
		}
		dir = filepath.Join(root, ".cache")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "env.d", "*.env"))
	for _, f := range files {
		if v, ok := ReadEnvFile(f)[key]; ok {
			return v
		}
	}
	return ""
}

// ReadEnvFile parses the KEY=VALUE lines of path, as scripts/setup.d writes
// them (a value may be wrapped in double quotes); lines starting with # are
// comments. A missing or unreadable file gives an empty map.
func ReadEnvFile(path string) map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		out[k] = v
	}
	return out
}

// moduleRoot finds the directory holding go.mod, walking up from the
// working directory (a test's working directory is its package directory).
func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
