package suite

import (
	"errors"
	"strings"
	"testing"
)

func TestBackupKey(t *testing.T) {
	us := seed("test", 5, "us")
	k := BackupKey(us)
	if len(k) != BackupKeyLen || strings.ContainsAny(k, " -=") || strings.ToLower(k) != k {
		t.Fatalf("backup key %q", k)
	}
	shown := FormatBackupKey(us)
	if len(shown) != 56+13 || len(strings.Fields(shown)) != 14 {
		t.Fatalf("shown as %q", shown)
	}
	for _, in := range []string{k, shown, strings.ToUpper(shown), strings.ReplaceAll(shown, " ", "-"), " " + k + " -"} {
		got, err := ParseBackupKey(in)
		if err != nil || got != us {
			t.Fatalf("%q: %v", in, err)
		}
	}
	// Every single-character substitution is caught by the 24-bit check:
	// 56 characters hold exactly 35 bytes, so no character is slack.
	for i := range k {
		for _, c := range "a7" {
			if byte(c) == k[i] {
				continue
			}
			bad := k[:i] + string(c) + k[i+1:]
			if _, err := ParseBackupKey(bad); !errors.Is(err, ErrBackupKey) {
				t.Fatalf("typo at %d accepted: %v", i, err)
			}
		}
	}
	for _, bad := range []string{"", k[:55], k + "a", k[:55] + "1", k[:55] + "_", k[:20] + "\t" + k[20:], strings.Repeat(" ", 1000)} {
		if _, err := ParseBackupKey(bad); !errors.Is(err, ErrBackupKey) {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
}

func FuzzParseBackupKey(f *testing.F) {
	f.Add(FormatBackupKey(seed("test", 6, "us")))
	f.Add(BackupKey([32]byte{}))
	f.Add("ABCD-efgh")
	f.Fuzz(func(t *testing.T, s string) {
		us, err := ParseBackupKey(s)
		if err != nil {
			if !errors.Is(err, ErrBackupKey) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// Accepted input is the encoding of the secret, up to case and separators.
		norm := strings.ToLower(strings.NewReplacer(" ", "", "-", "").Replace(s))
		if norm != BackupKey(us) {
			t.Fatalf("%q accepted as %q", s, BackupKey(us))
		}
	})
}
