package tandemcli_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/faultproxy"
)

// TestWrongPasswordAgainDovecot: Dovecot answers a login after wrong
// passwords later and later (up to 15 s, longer than connect's 5 s
// --timeout); each try still reads "refused", never as a server that
// stopped answering. The proxy holds Dovecot's refusal for 8 s, as its
// delay after the third wrong password does, so the test does not depend
// on what other tests did to the delay.
func TestWrongPasswordAgainDovecot(t *testing.T) {
	addr, user, _ := dovecotAccount(t)
	p := faultproxy.Start(t, addr)
	p.Rewrite(func(b []byte) []byte {
		if bytes.Contains(b, []byte("F1 NO")) {
			time.Sleep(8 * time.Second)
		}
		return b
	})
	d := initialized(t)
	d.env = []string{"FERRY_PASSWORD=wrong"}
	before := d.stored()
	for _, at := range []string{addr, addr, p.Addr()} {
		wantErr(t, d.run("connect", "imap", at, "--user", user, "--security", "none"), 1, at+" refused this user name and password: check them and connect again")
	}
	if d.stored() != before {
		t.Error("a refused login changed the profile")
	}
}
