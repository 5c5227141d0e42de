package tandemcli

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progressTick is how often the progress line is redrawn
// (docs/decisions/cli-output.md).
const progressTick = 150 * time.Millisecond

// withProgress runs fn (work that syncs) and, when stdout and stderr are
// terminals, shows on stderr how many of this device's changes are sent
// (tandem's Status.Pending going down), how many messages are read from the
// hub (Status.Received of Receiving: a first sync's download) and how long
// it has taken. Plain output (a pipe, a file, --json) gets no progress
// lines.
func (a *app) withProgress(s *session, what string, fn func() error) error {
	if a.json || a.quiet || !isTerminal(a.stdout) || !isTerminal(a.stderr) {
		return fn()
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		drawProgress(a.stderr, s, what, done)
	}()
	err := fn()
	close(done)
	<-finished
	return err
}

// drawProgress redraws the progress line until done is closed.
func drawProgress(w io.Writer, s *session, what string, done <-chan struct{}) {
	start := time.Now()
	total := s.dev.Status().Pending
	t := time.NewTicker(progressTick)
	defer t.Stop()
	for {
		st := s.dev.Status()
		total = max(total, st.Pending)
		line := progressLine(what, total-st.Pending, total, time.Since(start))
		if st.Receiving > 0 {
			line += fmt.Sprintf(", %d/%d received", st.Received, st.Receiving)
		}
		fmt.Fprintf(w, "\r\033[K%s", line)
		select {
		case <-done:
			fmt.Fprint(w, "\r\033[K")
			return
		case <-t.C:
		}
	}
}

// progressLine is "Syncing [#######.............] 12/40 sent, 3s": a bar
// when there are changes to send, else the time so far.
func progressLine(what string, sent, total int, took time.Duration) string {
	secs := fmt.Sprintf("%ds", int(took.Seconds()))
	if total <= 0 {
		return fmt.Sprintf("%s... %s", what, secs)
	}
	const width = 20
	n := min(width, sent*width/total)
	return fmt.Sprintf("%s [%s%s] %d/%d sent, %s", what, strings.Repeat("#", n), strings.Repeat(".", width-n), sent, total, secs)
}
