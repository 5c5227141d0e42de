package tandemcli

import (
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/ferry-sync/ferry/tandem"
	"github.com/spf13/cobra"
)

// backupSentence is what §6.3 says to show with the backup key.
const backupSentence = "Write this down. It's the only way back in if you lose every device."

// maxName bounds the name a user goes by.
const maxName = 100

func (a *app) initCmd() *cobra.Command {
	var name string
	c := &cobra.Command{
		Use:     "init",
		GroupID: groupSetup,
		Short:   "Set up this profile as a new device of a new user, and show the backup key once",
		Long: `Set up a new identity in the profile: you, as a Ferry user, with this device.
The backup key is shown once: write it down, it is the only way back in if
you lose every device (ferry backup-key shows it again). Then either join a
list someone sent you (ferry join LINK: it brings their mail account), or
connect your own mail account for your lists (ferry connect). To add this device to an identity you already
have, use ferry restore instead.`,
		Args: args(0, 0, ""),
		RunE: func(c *cobra.Command, _ []string) error {
			name, err := a.userName(name)
			if err != nil {
				return err
			}
			if dir, _, err := a.profileDir(); err != nil {
				return err
			} else if _, err := os.Stat(filepath.Join(dir, profileFile)); err == nil {
				return failf("exists", "%s already holds a device: use it, or choose another --profile", dir)
			}
			dir, undo, err := a.createProfile()
			if err != nil {
				return err
			}
			s := &session{dir: dir, prof: profileJSON{Version: 1, Name: name}}
			if err := s.openDevice(c.Context(), nil); err != nil {
				undo()
				return err
			}
			defer s.close()
			if err := writeJSON(filepath.Join(dir, profileFile), s.prof); err != nil {
				return err
			}
			key, ok := s.dev.BackupKey()
			if !ok { // the device was made by an init that stopped before profile.json
				key = s.dev.ShowBackupKey()
			}
			return a.printIdentity(c.OutOrStdout(), s, key)
		},
	}
	c.Flags().StringVar(&name, "name", "", "the name others see for you in lists you share (default: your login name)")
	return a.flags(c, true)
}

// userName checks --name, or picks the login name.
func (a *app) userName(name string) (string, error) {
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
		if name == "" {
			name = a.getenv("USER")
		}
		if name == "" {
			return "", usagef("give the name others should see for you: --name NAME")
		}
	}
	name = strings.TrimSpace(name)
	if name == "" || !utf8.ValidString(name) || len(name) > maxName || strings.ContainsAny(name, "\r\n\t\x00") {
		return "", usagef("--name must be one line of 1 to %d bytes of text", maxName)
	}
	return name, nil
}

type identityJSON struct {
	Profile   string `json:"profile"`
	Name      string `json:"name"`
	User      string `json:"user"`
	Device    string `json:"device"`
	BackupKey string `json:"backup_key,omitempty"`
}

func (a *app) printIdentity(w io.Writer, s *session, key string) error {
	id := s.dev.DeviceID()
	out := identityJSON{Profile: s.dir, Name: s.prof.Name, User: s.dev.UserID().String(), Device: fmt.Sprintf("%x", id[:]), BackupKey: groupKey(key)}
	if a.json {
		return emit(w, out)
	}
	fmt.Fprintf(w, "Ferry is set up in %s for %s.\n", s.dir, disp(s.prof.Name))
	if key != "" {
		fmt.Fprintf(w, "\nYour backup key:\n\n    %s\n\n%s\n", out.BackupKey, backupSentence)
		fmt.Fprintln(w, "Keep the details of your mail account next to it.")
	}
	fmt.Fprintln(w, "\nNext, one of:\n  ferry join LINK      join a list someone sent you (it brings their mail account)\n  ferry connect ...    connect your own mail account for your lists (ferry connect jmap URL, or ferry connect imap HOST)")
	return nil
}

// groupKey shows a backup key as §6.3 says: groups of four.
func groupKey(k string) string {
	var g []string
	for i := 0; i < len(k); i += 4 {
		g = append(g, k[i:min(i+4, len(k))])
	}
	return strings.Join(g, " ")
}

func (a *app) restoreCmd() *cobra.Command {
	var name, keyFile string
	c := &cobra.Command{
		Use:     "restore",
		GroupID: groupSetup,
		Short:   "Set up this profile as a new device of the user whose backup key you type",
		Long: `Install your identity from its backup key on a new device (an empty profile):
the key is asked for on the terminal, read from --backup-key-file (- for
standard input) or from FERRY_BACKUP_KEY. Then connect the same mail account
with ferry connect, and ferry sync finds your lists.`,
		Args: args(0, 0, ""),
		RunE: func(c *cobra.Command, _ []string) error {
			name, err := a.userName(name)
			if err != nil {
				return err
			}
			key, err := a.readSecret(c, secretSource{what: "backup key", file: keyFile, flag: "backup-key-file", env: "FERRY_BACKUP_KEY", prompt: "Backup key: "})
			if err != nil {
				return err
			}
			if dir, _, err := a.profileDir(); err != nil {
				return err
			} else if _, err := os.Stat(filepath.Join(dir, profileFile)); err == nil {
				return a.repair(c, dir, key, name)
			}
			dir, undo, err := a.createProfile()
			if err != nil {
				return err
			}
			s := &session{dir: dir, prof: profileJSON{Version: 1, Name: name}}
			if err := s.openDevice(c.Context(), &key); err != nil {
				undo()
				return err
			}
			defer s.close()
			if err := writeJSON(filepath.Join(dir, profileFile), s.prof); err != nil {
				return err
			}
			if a.json {
				return a.printIdentity(c.OutOrStdout(), s, "")
			}
			fmt.Fprintf(c.OutOrStdout(), "Restored %s's identity in %s as a new device.\n", disp(name), dir)
			if !c.Flags().Changed("name") {
				fmt.Fprintf(c.OutOrStdout(), "You join and make lists as %s, your login name: ferry name NEW changes it.\n", disp(name))
			}
			fmt.Fprintln(c.OutOrStdout(), "Next: connect the same mail account with ferry connect, then ferry sync.")
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "the name others see for you (default: your login name)")
	c.Flags().StringVar(&keyFile, "backup-key-file", "", "read the backup key from this file (- for standard input)")
	return a.flags(c, true)
}

// repair restores the identity into the existing profile dir when its
// device lost its identity file (tandem says CodeDamaged and Restore
// repairs it, keeping the unsent edits); a profile whose device opens is
// refused, as before. name, when given, replaces the profile's name.
func (a *app) repair(c *cobra.Command, dir, key, name string) error {
	s, err := a.open(c.Context())
	if err == nil {
		s.close()
		return failf("exists", "%s already holds a device: restore into another --profile", dir)
	}
	if tandem.CodeOf(err) != tandem.CodeDamaged {
		return err
	}
	prof, err := readProfile(dir)
	if err != nil {
		return err
	}
	if c.Flags().Changed("name") {
		prof.Name = name
	}
	trust, err := profileTrust(dir)
	if err != nil {
		return err
	}
	s = &session{dir: dir, prof: prof, trust: trust, verbose: a.verbose}
	if err := s.openDevice(c.Context(), &key); err != nil {
		return err
	}
	defer s.close()
	if err := writeJSON(filepath.Join(dir, profileFile), s.prof); err != nil {
		return err
	}
	if a.json {
		return a.printIdentity(c.OutOrStdout(), s, "")
	}
	fmt.Fprintf(c.OutOrStdout(), "Repaired %s with %s's backup key: its unsent changes are kept.\n", dir, disp(prof.Name))
	return nil
}

func (a *app) backupKeyCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "backup-key",
		GroupID: groupSetup,
		Short:   "Show the backup key again (after a confirmation)",
		Long: `Show the backup key. Anyone who sees it can be you, in every list, for good:
ferry asks first (answer y), unless --yes is given.`,
		Args: args(0, 0, ""),
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer s.close()
			if !a.confirm(c, "Anyone who sees the backup key can be you, in every list. Show it?") {
				return failf("declined", "not shown (answer y to show it)")
			}
			key := groupKey(s.dev.ShowBackupKey())
			if a.json {
				return emit(c.OutOrStdout(), map[string]string{"backup_key": key})
			}
			fmt.Fprintf(c.OutOrStdout(), "%s\n\n%s\n", key, backupSentence)
			return nil
		},
	}
	c.Flags().BoolVarP(&a.yes, "yes", "y", false, "do not ask")
	return a.flags(c, true)
}
