package tandem

import (
	"encoding/json"
	"testing"
)

// TestCodeNames: every code has its own name, and JSON shows it.
func TestCodeNames(t *testing.T) {
	seen := map[string]Code{}
	for c := CodeInternal; c <= CodePairing; c++ {
		n := c.String()
		if _, ok := codeNames[c]; !ok {
			t.Errorf("code %d has no name", int(c))
		}
		if prev, dup := seen[n]; dup {
			t.Errorf("codes %d and %d are both %q", int(prev), int(c), n)
		}
		seen[n] = c
	}
	b, err := json.Marshal(map[string]Code{"code": CodeNotFound})
	if err != nil || string(b) != `{"code":"not_found"}` {
		t.Fatalf("JSON: %s %v", b, err)
	}
}
