package tjson

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRequiredTagKey: requiredness lives under its own tag key. A struct
// still written the old way (`json:"name,required"`) would decode with the
// member silently optional, so this walks the tandem tree for it.
func TestRequiredTagKey(t *testing.T) {
	var s struct {
		A string `json:"a" tjson:"required"`
		B string `json:"b"`
	}
	if err := Unmarshal([]byte(`{"b":"x"}`), &s); err == nil {
		t.Fatal("missing tjson:\"required\" member accepted")
	}
	if err := Unmarshal([]byte(`{"a":"x"}`), &s); err != nil {
		t.Fatalf("optional member treated as required: %v", err)
	}

	old := regexp.MustCompile("json:\"[^\"]*,required")
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "tag_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if loc := old.FindIndex(b); loc != nil {
			t.Errorf("%s: %q: write `json:\"name\" tjson:\"required\"`", path, b[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
