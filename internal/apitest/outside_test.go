// Package apitest checks the public face from outside the module.
package apitest

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestExamplesBuildOutsideModule copies every Example file of a public
// package into a throwaway module outside the tree, which requires this
// module through a replace directive, and compiles it with go vet. An
// Example that names an internal package, or leans on a helper of its own
// package's tests, fails here: an app copying it could not build it.
// It runs offline: the module cache must hold the dependencies (it does
// after any build of this module).
func TestExamplesBuildOutsideModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a second module")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	app := t.TempDir()
	n := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "internal" || name == "cmd" || name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") || !strings.Contains(d.Name(), "example") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !regexp.MustCompile(`(?m)^package \w+_test$`).Match(src) {
			t.Errorf("%s: an Example file should be an external test package (package x_test), as an app sees it", rel)
			return nil
		}
		dst := filepath.Join(app, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		n++
		return os.WriteFile(dst, src, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no Example files found")
	}
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go .*$`).Find(goMod)
	mod := "module example.com/app\n\n" + string(goLine) + "\n\nrequire github.com/ferry-sync/ferry v0.0.0\n\nreplace github.com/ferry-sync/ferry => " + root + "\n"
	if err := os.WriteFile(filepath.Join(app, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "vet", "./...")
	cmd.Dir = app
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off", "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the Examples do not build in another module (%d files): %v\n%s", n, err, out.String())
	}
	t.Logf("%d Example files build in another module", n)
}
