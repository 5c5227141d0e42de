package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.1"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-12-01T16:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := describeBuild("", bi), "v0.3.1 (rev 0123456789ab, 2026-12-01T16:00:00Z, modified, go1.26.8)"; got != want {
		t.Fatalf("describeBuild = %q, want %q", got, want)
	}
	if got := describeBuild("v9", bi); !strings.HasPrefix(got, "v9 (rev 0123456789ab") {
		t.Fatalf("linked version: %q", got)
	}
	// go run / go test: no module version, no VCS settings (issue 16: "(devel)").
	if got := describeBuild("", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}); got != "devel" {
		t.Fatalf("devel build: %q", got)
	}
}

func TestVersionFlag(t *testing.T) {
	out, err := run(t, "--version")
	if err != nil || !strings.HasPrefix(out, "ferry ") || strings.Contains(out, "(devel)") {
		t.Fatalf("--version: %q %v", out, err)
	}
	cmdOut, _ := run(t, "version")
	if cmdOut != out {
		t.Fatalf("version %q and --version %q differ", cmdOut, out)
	}
}
