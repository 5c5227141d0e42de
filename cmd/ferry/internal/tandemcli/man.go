package tandemcli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// manDate fixes the date in generated pages, so docs/man/ changes only
// when the commands do.
var manDate = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func (a *app) manCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "man DIR",
		Short: "Write ferry's man pages (ferry.1, ferry-init.1, ...) into DIR, made if missing",
		Args:  args(1, 1, "man DIR"),
		RunE: func(c *cobra.Command, as []string) error {
			dir := as[0]
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return failf("storage", "cannot make the directory %s: %v", dir, pathErr(err))
			}
			// No title: each page has its own name in its header.
			hdr := &doc.GenManHeader{Section: "1", Date: &manDate, Source: "Ferry", Manual: "Ferry manual"}
			root.DisableAutoGenTag = true
			if err := doc.GenManTree(root, hdr, dir); err != nil {
				return failf("storage", "cannot write the man pages in %s: %v", dir, pathErr(err))
			}
			pages := manPages(root)
			for _, p := range pages {
				if err := addManSections(filepath.Join(dir, p)); err != nil {
					return err
				}
			}
			fmt.Fprintf(c.OutOrStdout(), "Wrote %d man pages in %s: %s.\n", len(pages), dir, strings.Join(pages, ", "))
			return nil
		},
	}
}

// manPages are the files GenManTree writes for root and its commands.
func manPages(c *cobra.Command) []string {
	out := []string{strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"}
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
			continue
		}
		out = append(out, manPages(sub)...)
	}
	return out
}

// addManSections puts ENVIRONMENT, FILES and EXIT STATUS before a page's
// SEE ALSO.
func addManSections(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return failf("storage", "cannot read %s: %v", path, pathErr(err))
	}
	at := bytes.Index(b, []byte(".SH SEE ALSO"))
	if at < 0 {
		at = len(b)
	}
	out := append(append(append([]byte{}, b[:at]...), manSections...), b[at:]...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return failf("storage", "cannot write %s: %v", path, pathErr(err))
	}
	return nil
}

var manSections = []byte(`.SH ENVIRONMENT
.TP
\fBFERRY_HOME\fP
The profile directory (one device), unless \fB\-\-profile\fP is given.
.TP
\fBXDG_DATA_HOME\fP, \fBHOME\fP
Without either of the above, the profile is \fI$XDG_DATA_HOME/ferry\fP, else \fI~/.local/share/ferry\fP.
.TP
\fBFERRY_PASSWORD\fP
The mail account's password or token for \fBferry connect\fP (instead of a prompt or \fB\-\-password\-file\fP).
.TP
\fBFERRY_BACKUP_KEY\fP
The backup key for \fBferry restore\fP.
.TP
\fBFERRY_DEBUG\fP
Set to 1, an error also prints its cause on a second line, for bug reports.
.TP
\fBSSL_CERT_FILE\fP, \fBSSL_CERT_DIR\fP
The system's certificate authorities; a profile's own is given with \fB\-\-ca\-file\fP.
.SH FILES
.TP
\fIPROFILE/profile.json\fP
The name you go by in lists.
.TP
\fIPROFILE/device/\fP
The device: its keys, lists and the mail account (keep it private).
.TP
\fIPROFILE/ca.pem\fP
The mail server's certificate authority, from \fB\-\-ca\-file\fP.
.TP
\fIPROFILE/state.json\fP, \fIPROFILE/joins.json\fP
The last sync's outcome, and the lists you asked to join.
.TP
\fIPROFILE/ferry.log\fP
The device's log.
.SH EXIT STATUS
.nf
` + strings.ReplaceAll(exitCodesText, `\`, `\\`) + `
.fi
`)
