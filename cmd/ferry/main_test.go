package main

import (
	"bytes"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestVersion(t *testing.T) {
	out, err := run(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "ferry ") {
		t.Fatalf("version output %q", out)
	}
}

func TestHelpListsVersion(t *testing.T) {
	out, err := run(t, "help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "version") {
		t.Fatalf("help output lacks version command: %q", out)
	}
}

func TestUnknownCommandFails(t *testing.T) {
	if _, err := run(t, "no-such-command"); err == nil {
		t.Fatal("unknown command accepted")
	}
}
