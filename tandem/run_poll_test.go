package tandem

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
)

// waitUntil waits, on d's change notifications (and a look every 100 ms
// for what they don't announce, like Status), until ok holds or the
// deadline passes.
func waitUntil(t *testing.T, d *Device, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.After(within)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ch := d.Changed()
		if ok() {
			return
		}
		select {
		case <-ch:
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within %s", what, within)
		}
	}
}

// Defect 7 of issue 22: on Cyrus, an IMAP IDLE is not told of a message
// appended over JMAP. In a group of one JMAP and one IMAP device, the IMAP
// device finds a change no notification announced (here when it syncs its
// own edit) and polls fast from then on: the JMAP device's next edits
// reach it within that bound, although its safety poll is set far beyond
// the test's deadline. Edits the other way arrive by the JMAP watch.
func TestPollWhenPushesMiss(t *testing.T) {
	jm, _, addr, pass := cyrusJMAP(t, "amber")
	imap := func(ctx context.Context) (hub.Store, error) {
		return imaphub.Open(ctx, imaphub.Config{Addr: addr, User: "amber", Password: pass})
	}
	dir := t.TempDir()
	j := openT(t, filepath.Join(dir, "j"), Options{Name: "Jesper", Hub: jm})
	defer j.Close()
	ai := openT(t, filepath.Join(dir, "ai"), Options{Name: "Aimee", Store: imap})
	defer ai.Close()
	c, err := j.NewCollection("House")
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, j)
	qr, err := j.Invite(c, InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, j)
	if _, err := ai.Join(t.Context(), qr.Payload, "Aimee"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		syncT(t, ai)
		syncT(t, j)
	}
	if roleT(t, ai, c) != RoleWriter {
		t.Fatalf("Aimee did not join: %q", roleT(t, ai, c))
	}
	// No safety poll within the test; the fast poll shorter than Run's
	// pollFast so that the test tells it from Cyrus's own minute.
	const fast = 5 * time.Second
	ai.pollTest = &[2]time.Duration{10 * time.Minute, fast}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 2)
	go func() { done <- j.Run(ctx) }()
	go func() { done <- ai.Run(ctx) }()
	defer func() {
		cancel()
		<-done
		<-done
	}()
	waitUntil(t, ai, time.Minute, "Aimee's device online", func() bool { return ai.Status().Online && !ai.Status().LastSync.IsZero() })
	waitUntil(t, j, time.Minute, "Jesper's device online", func() bool { return j.Status().Online && !j.Status().LastSync.IsZero() })

	get := func(d *Device, id RecordID) string { r, _ := d.Record(c, id); return r.Get("title") }
	one, err := j.NewRecord(c, map[string][]byte{"title": []byte("one")})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, j, time.Minute, "Jesper's edit on the hub", func() bool { return j.Status().Pending == 0 })
	mine, err := ai.NewRecord(c, map[string][]byte{"title": []byte("from Aimee")})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ai, time.Minute, "Jesper's first edit on Aimee's device", func() bool { return get(ai, one) == "one" })
	waitUntil(t, j, time.Minute, "Aimee's edit on Jesper's device", func() bool { return get(j, mine) == "from Aimee" })

	// The bound: one fast poll and a generous sync. Cyrus's own IDLE
	// fallback (imapd re-checks an idling folder about once a minute) would
	// make three edits in a row all arrive within it only by rare luck.
	bound := fast + 20*time.Second
	for i := range 3 {
		title := fmt.Sprint("edit ", i)
		id, err := j.NewRecord(c, map[string][]byte{"title": []byte(title)})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		waitUntil(t, ai, bound, "Jesper's "+title+" on Aimee's device", func() bool { return get(ai, id) == title })
		t.Logf("%s reached the IMAP device in %s", title, time.Since(start).Round(100*time.Millisecond))
	}
	if err := ai.SetString(c, mine, "title", "from Aimee, again"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, j, bound, "Aimee's next edit on Jesper's device", func() bool { return get(j, mine) == "from Aimee, again" })
}
