package tandemcli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// maxSecret bounds a password, token or backup key read from a file or
// standard input.
const maxSecret = 4096

// isTerminal reports whether v is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// secretSource says where a secret may come from: a file named by a flag
// ("-" is standard input), an environment variable, or a prompt on the
// terminal. Never from a flag's value, which would land in shell history.
type secretSource struct {
	what   string // "password", "token", "backup key"
	file   string // the --*-file flag's value
	flag   string // that flag's name, for messages
	env    string // the environment variable
	prompt string // the prompt on a terminal
}

// read returns the secret from the first source that has one.
func (a *app) readSecret(c *cobra.Command, src secretSource) (string, error) {
	if src.file != "" {
		return readSecretFile(c.InOrStdin(), src.file, src.what, src.flag)
	}
	if v := a.getenv(src.env); v != "" {
		return strings.TrimSpace(v), nil
	}
	in := c.InOrStdin()
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(c.ErrOrStderr(), src.prompt)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(c.ErrOrStderr())
		if err != nil {
			return "", failf("interrupted", "no %s was typed", src.what)
		}
		if s := strings.TrimSpace(string(b)); s != "" {
			return s, nil
		}
		return "", usagef("no %s was typed", src.what)
	}
	return "", usagef("no %s: pass --%s FILE (- for standard input), set %s, or run ferry in a terminal to be asked", src.what, src.flag, src.env)
}

// readSecretFile reads a secret's first line from a file or standard input.
func readSecretFile(stdin io.Reader, path, what, flag string) (string, error) {
	var r io.Reader = stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", failf("invalid", "cannot read the %s from %s: %v", what, path, pathErr(err))
		}
		defer f.Close()
		r = f
	}
	line, err := bufio.NewReader(io.LimitReader(r, maxSecret+1)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", failf("invalid", "cannot read the %s from %s: %v", what, path, err)
	}
	if len(line) > maxSecret {
		return "", usagef("the %s in %s is longer than %d bytes: give only the %s", what, path, maxSecret, what)
	}
	s := strings.TrimSpace(line)
	if s == "" {
		return "", usagef("%s is empty: put the %s on its first line (--%s)", path, what, flag)
	}
	return s, nil
}

// confirm asks a yes/no question on stderr and reads the answer from
// standard input; --yes answers yes. No answer (end of input) is no.
func (a *app) confirm(c *cobra.Command, question string) bool {
	if a.yes {
		return true
	}
	fmt.Fprintf(c.ErrOrStderr(), "%s [y/N] ", question)
	answer := readLine(c.InOrStdin(), 256)
	if !isTerminal(c.InOrStdin()) { // the answer's newline was not echoed
		fmt.Fprintln(c.ErrOrStderr())
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true
	}
	return false
}

// readLine reads one line of at most max bytes, a byte at a time so that
// nothing after it is consumed (a later prompt reads the next line).
func readLine(r io.Reader, max int) string {
	var b []byte
	one := make([]byte, 1)
	for len(b) < max {
		n, err := r.Read(one)
		if n == 1 {
			if one[0] == '\n' {
				break
			}
			b = append(b, one[0])
		}
		if err != nil {
			break
		}
	}
	return string(b)
}
