package tandemcli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

// newDeviceDir is where start-over builds the new identity before it
// takes the place of deviceDir (docs/decisions/cli-profiles.md).
const newDeviceDir = "device.new"

// finishStartOver completes a start-over that stopped between its two
// renames: the new device is there, the old one already moved away.
func finishStartOver(dir string) {
	dev, nw := filepath.Join(dir, deviceDir), filepath.Join(dir, newDeviceDir)
	if _, err := os.Stat(dev); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	if _, err := os.Stat(filepath.Join(nw, "secret")); err == nil {
		os.Rename(nw, dev)
	}
}

type startOverOut struct {
	Identity identityJSON `json:"identity"`
	Copies   []copyOut    `json:"copies"`
	AskAgain []string     `json:"ask_again"` // other people's lists: ask to be invited again
	Old      string       `json:"old"`       // where the abandoned device's files are
}

type copyOut struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Name    string `json:"name"`
	Records int    `json:"records"`
}

func (a *app) startOverCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "start-over",
		GroupID: groupSetup,
		Short:   "Start over on this device with a new identity (a device or the backup key was stolen)",
		Long: `Start over on this device: a new identity with a new backup key. Your
own lists are copied into new ones (invite people again); for other people's
lists, ask them to invite you again. The old identity's files are kept in the
profile as abandoned-TIME/, and nothing changes on the mail account for it.`,
		Args: args(0, 0, "start-over"),
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer s.close()
			if !a.confirm(c, "Start over with a new identity? Your lists are copied; people must invite you again.") {
				return failf("declined", "nothing changed (answer y to start over)")
			}
			out, nd, err := a.startOver(c.Context(), s)
			if err != nil {
				return err
			}
			defer nd.Close()
			return a.printStartOver(c, nd, out)
		},
	}
	c.Flags().BoolVarP(&a.yes, "yes", "y", false, "do not ask")
	return a.flags(c, true)
}

// startOver makes the new identity in device.new and puts it in place.
func (a *app) startOver(ctx context.Context, s *session) (startOverOut, *tandem.Device, error) {
	var out startOverOut
	nw := filepath.Join(s.dir, newDeviceDir)
	if err := os.RemoveAll(nw); err != nil { // a start-over that stopped before its device was complete
		return out, nil, failf("storage", "cannot remove %s: %v", nw, pathErr(err))
	}
	so, err := s.dev.StartOver(ctx, nw, tandem.Options{Name: s.prof.Name, Logger: s.logger()})
	if err != nil {
		return out, nil, err
	}
	key, _ := so.Device.BackupKey()
	id := so.Device.DeviceID()
	out.Identity = identityJSON{Profile: s.dir, Name: s.prof.Name, User: so.Device.UserID().String(), Device: fmt.Sprintf("%x", id[:]), BackupKey: groupKey(key)}
	out.Copies, out.AskAgain = []copyOut{}, []string{}
	for _, cp := range so.Copies {
		out.Copies = append(out.Copies, copyOut{From: cp.From.String(), To: cp.To.String(), Name: cp.Name, Records: cp.Records})
	}
	for _, c := range so.AskAgain {
		name := c.String()
		if l, err := oneList(s.dev, c); err == nil {
			name = l.Name
		}
		out.AskAgain = append(out.AskAgain, name)
	}
	// Swap: the old device moves aside, the new one takes its place.
	so.Device.Close()
	s.dev.Close()
	s.dev = nil
	out.Old = filepath.Join(s.dir, "abandoned-"+time.Now().UTC().Format("20060102T150405"))
	if err := os.Rename(filepath.Join(s.dir, deviceDir), out.Old); err != nil {
		return out, nil, failf("storage", "cannot move the old device aside: %v", pathErr(err))
	}
	if err := os.Rename(nw, filepath.Join(s.dir, deviceDir)); err != nil {
		return out, nil, failf("storage", "cannot put the new device in place: %v (ferry finishes it at the next command)", pathErr(err))
	}
	// The old identity's requests to join are not the new one's.
	os.Rename(filepath.Join(s.dir, joinsFile), filepath.Join(out.Old, joinsFile))
	nd, err := tandem.Open(ctx, filepath.Join(s.dir, deviceDir), tandem.Options{Name: s.prof.Name, Logger: s.logger()})
	if err != nil {
		return out, nil, err
	}
	s.dev = nd
	if _, err := a.syncOnce(ctx, s, syncTimeout); err != nil && classify(err).Kind != "offline" {
		s.dev = nil
		return out, nd, err
	}
	s.dev = nil
	return out, nd, nil
}

func (a *app) printStartOver(c *cobra.Command, nd *tandem.Device, out startOverOut) error {
	if a.json {
		return emit(c.OutOrStdout(), out)
	}
	w := c.OutOrStdout()
	fmt.Fprintf(w, "You have a new identity on this device.\n\nYour new backup key:\n\n    %s\n\n%s\n\n", out.Identity.BackupKey, backupSentence)
	for _, cp := range out.Copies {
		fmt.Fprintf(w, "Copied %s (%d item(s)): invite people again with ferry share.\n", disp(cp.Name), cp.Records)
	}
	for _, n := range out.AskAgain {
		fmt.Fprintf(w, "%s is someone else's list: ask its owner to invite you again.\n", disp(n))
	}
	fmt.Fprintf(w, "The old identity's files are in %s.\n", out.Old)
	return nil
}
