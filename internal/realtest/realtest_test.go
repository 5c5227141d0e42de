package realtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestReadEnvFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.env")
	body := "# comment\nA=1\nB=\"two words\"\n\nC=x=y\nnoequals\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	got := ReadEnvFile(p)
	want := map[string]string{"A": "1", "B": "two words", "C": "x=y"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if m := ReadEnvFile(filepath.Join(t.TempDir(), "missing")); len(m) != 0 {
		t.Fatalf("missing file gave %v", m)
	}
}

func TestGetenvFallsBackToEnvFiles(t *testing.T) {
	cache := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cache, "env.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "env.d", "s.env"), []byte("FERRY_REALTEST_X=from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FERRY_CACHE", cache)
	if got := Getenv("FERRY_REALTEST_X"); got != "from-file" {
		t.Fatalf("Getenv from file = %q", got)
	}
	t.Setenv("FERRY_REALTEST_X", "from-env")
	if got := Getenv("FERRY_REALTEST_X"); got != "from-env" {
		t.Fatalf("Getenv from environment = %q", got)
	}
	if got := Getenv("FERRY_REALTEST_NOT_THERE"); got != "" {
		t.Fatalf("Getenv of an unknown key = %q", got)
	}
}

func TestRequired(t *testing.T) {
	t.Setenv("FERRY_REQUIRE_REAL", "1")
	if !Required() {
		t.Fatal("FERRY_REQUIRE_REAL=1 not seen")
	}
	t.Setenv("FERRY_REQUIRE_REAL", "")
	if Required() {
		t.Fatal("empty FERRY_REQUIRE_REAL seen as required")
	}
}

// recorder is a testing.TB that records how Unavailable ended it.
type recorder struct {
	testing.TB
	fatal, skip bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.fatal = true }
func (r *recorder) Skipf(string, ...any)  { r.skip = true }

func TestUnavailableFailsWhenRequired(t *testing.T) {
	t.Setenv("FERRY_REQUIRE_REAL", "1")
	r := &recorder{TB: t}
	Unavailable(r, "no server")
	if !r.fatal || r.skip {
		t.Fatalf("required: fatal=%v skip=%v, want a failure", r.fatal, r.skip)
	}
	t.Setenv("FERRY_REQUIRE_REAL", "0")
	r = &recorder{TB: t}
	Unavailable(r, "no server")
	if r.fatal || !r.skip {
		t.Fatalf("not required: fatal=%v skip=%v, want a skip", r.fatal, r.skip)
	}
}

func TestScale(t *testing.T) {
	for _, c := range []struct {
		slowdown, require string
		want              time.Duration
	}{
		{"", "", time.Second},
		{"", "1", 3 * time.Second},
		{"2.5", "", 2500 * time.Millisecond},
		{"4", "1", 4 * time.Second},
		{"0.5", "", time.Second}, // below 1: ignored
		{"fast", "1", 3 * time.Second},
	} {
		t.Setenv("FERRY_TEST_SLOWDOWN", c.slowdown)
		t.Setenv("FERRY_REQUIRE_REAL", c.require)
		if got := Scale(time.Second); got != c.want {
			t.Errorf("FERRY_TEST_SLOWDOWN=%q FERRY_REQUIRE_REAL=%q: Scale(1s) = %v, want %v", c.slowdown, c.require, got, c.want)
		}
	}
}
