package hubdesc

import (
	"errors"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

func TestParseRoundTrip(t *testing.T) {
	for _, d := range []Desc{
		JMAP("https://api.fastmail.com/jmap/session", "tok"),
		JMAPBasic("https://cyrus.example", "jesper", "pw"),
		IMAP("imap.example.com", 993, "jesper", "pw"),
		IMAP("127.0.0.1", 1143, "jesper", "pw"),
	} {
		b, err := d.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(b)
		if err != nil || back != d {
			t.Fatalf("%s: back %+v, %v", b, back, err)
		}
	}
	if got := JMAP("https://cyrus.example/", "").Session; got != "https://cyrus.example/.well-known/jmap" {
		t.Fatalf("bare origin: %s", got)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, s := range []string{
		`{"kind":"imap","host":"h","port":993,"user":"u","user":"v"}`,
		`{"kind":"jmap"}`,
		`{"kind":"imap","host":"h","port":70000,"user":"u"}`,
		`{"kind":"imap","host":"h","port":993,"user":"u","security":"maybe"}`,
		`{"kind":"smtp"}`,
		`{"host":"h"}`,
		`[]`,
	} {
		_, err := Parse([]byte(s))
		var e *InvalidError
		if !errors.As(err, &e) || e.Reason == "" {
			t.Fatalf("%s: %v, want an *InvalidError with a reason", s, err)
		}
	}
	_, err := Parse([]byte(`{"kind":"imap","kind":"jmap"}`))
	if !errors.Is(err, tjson.ErrDuplicateName) {
		t.Fatalf("duplicate key: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, d := range []Desc{JMAP("https://h/jmap", "t"), JMAPBasic("https://h/", "u", "p"), IMAP("h", 993, "u", "p")} {
		b, _ := d.Marshal()
		f.Add(b)
	}
	f.Add([]byte(`{"kind":"imap","host":"h","port":1,"user":"u","security":"starttls"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Parse(b)
		if err != nil {
			return
		}
		if d.IsZero() {
			t.Fatal("parsed a zero descriptor")
		}
		again, err := d.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(again)
		if err != nil || back != d {
			t.Fatalf("round trip of %s: %+v, %v", again, back, err)
		}
	})
}
