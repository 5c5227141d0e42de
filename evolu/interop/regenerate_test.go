package interop

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestVectorsRegenerate runs the generator with the real @evolu/common 8.11.0
// and checks that it reproduces the committed vectors byte for byte, so
// testdata/evolu is what the real package makes, not hand-edited data.
func TestVectorsRegenerate(t *testing.T) {
	e := needReal(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := e.nodeCmd(ctx, "gen-vectors.mjs", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen-vectors: %v\n%s", err, out)
	}
	committed, err := filepath.Glob(filepath.Join(repoRoot(t), "testdata", "evolu", "*.json"))
	if err != nil || len(committed) < 8 {
		t.Fatalf("committed vectors: %v %v", committed, err)
	}
	for _, path := range committed {
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, filepath.Base(path)))
		if err != nil {
			t.Errorf("%s not generated: %v", filepath.Base(path), err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the real package now produces different bytes", filepath.Base(path))
		}
	}
}
