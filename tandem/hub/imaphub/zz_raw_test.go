package imaphub

import (
	"io"
	"slices"
	"testing"
	"time"
)

func TestZZRaw(t *testing.T) {
	cfg := dovecot(t, "FERRY_DOVECOT_ADDR", "carol")
	nc, rd, err := rawLogin(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	buf := make([]byte, 64<<10)
	cmds := []string{"UID FETCH 1:* BODY.PEEK[TEXT]", "UID FETCH 1:* (UID BODY.PEEK[HEADER.FIELDS (Tandem-Version Tandem-Channel Content-Type Content-Transfer-Encoding)] BODY.PEEK[TEXT])", "UID FETCH 1:* (UID BODY.PEEK[])", "UID FETCH 1:* (UID BODY.PEEK[HEADER.FIELDS (Tandem-Channel)])", "UID FETCH 1:* (UID BODY.PEEK[HEADER] BODY.PEEK[TEXT])"}
	res := make([][]time.Duration, len(cmds))
	for range 15 {
		for i, c := range cmds {
			t0 := time.Now()
			io.WriteString(nc, "f "+c+"\r\n")
			rawRead(rd, buf)
			res[i] = append(res[i], time.Since(t0))
		}
	}
	for i, c := range cmds {
		slices.Sort(res[i])
		t.Logf("%-50.50s median %v min %v", c, res[i][7], res[i][0])
	}
}
