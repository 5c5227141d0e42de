package tandemcli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ferry-sync/ferry/tandem"
)

// Exit codes of the ferry binary (docs/decisions/cli-output.md; also in
// "ferry help exit-codes" and the man page).
const (
	ExitOK    = 0 // the command did what it was asked
	ExitError = 1 // it could not: the message says why and what to do
	ExitUsage = 2 // the command line was wrong: unknown command or flag, bad argument
	// ExitInterrupted is a command stopped by Ctrl-C (128 + SIGINT, as
	// shells report it); sync --watch and a waiting share stop there by
	// design and exit 0.
	ExitInterrupted = 130
)

// Error is an error shown to a person: one line, with the fix. Kind is a
// stable word for scripts (the "kind" of a --json error).
type Error struct {
	Exit int
	Kind string
	Msg  string
	Err  error // the cause, for logs; never shown
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// usagef is a command-line error (exit 2).
func usagef(format string, args ...any) *Error {
	return &Error{Exit: ExitUsage, Kind: "usage", Msg: fmt.Sprintf(format, args...)}
}

// failf is an error of the given kind (exit 1).
func failf(kind, format string, args ...any) *Error {
	e := &Error{Exit: ExitError, Kind: kind, Msg: fmt.Sprintf(format, args...)}
	if kind == "interrupted" {
		e.Exit = ExitInterrupted
	}
	return e
}

// codeKinds names tandem's error codes for --json.
var codeKinds = map[tandem.Code]string{
	tandem.CodeInternal: "internal", tandem.CodeOffline: "offline", tandem.CodeAuth: "auth",
	tandem.CodeLocked: "locked", tandem.CodeNewerVersion: "newer_version", tandem.CodeStorage: "storage",
	tandem.CodeNotFound: "not_found", tandem.CodeNotWritable: "not_writable", tandem.CodeInvalid: "invalid",
	tandem.CodeExists: "exists", tandem.CodeNoHub: "no_hub", tandem.CodeNoDevice: "no_device",
	tandem.CodeWrongIdentity: "wrong_identity", tandem.CodeBackupKey: "backup_key", tandem.CodeTooLarge: "too_large",
	tandem.CodeInFlight: "in_flight", tandem.CodeExpired: "expired", tandem.CodeDifferentHub: "different_hub",
	tandem.CodePairing: "pairing", tandem.CodeDamaged: "damaged",
}

// fromTandem turns a tandem error into an *Error with its Message.
func fromTandem(err error) *Error {
	var e *tandem.Error
	if !errors.As(err, &e) {
		return nil
	}
	kind := codeKinds[e.Code]
	if kind == "" {
		kind = fmt.Sprintf("code_%d", e.Code) // a code newer than this list: still not "internal"
	}
	msg := e.Message
	if e.Code == tandem.CodeInternal {
		msg += " (this is a bug in Ferry; the profile's ferry.log has the details)"
	}
	return &Error{Exit: ExitError, Kind: kind, Msg: msg, Err: err}
}

// classify finds the *Error to show for err: ours, tandem's, cobra's
// usage errors (exit 2), or anything else (exit 1, shown as it is, for
// the commands of other subsystems).
func classify(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if t := certErr(err, ""); t != nil { // a sync that met a certificate it can't trust
		return t
	}
	if t := fromTandem(err); t != nil {
		return t
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "unknown command ") {
		// cobra's "unknown command "x" for "ferry"\n\nDid you mean this?\n\tshow\n"
		head, sugg, _ := strings.Cut(msg, "\n")
		head = strings.TrimSuffix(head, ` for "ferry"`)
		if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sugg), "Did you mean this?")); len(f) > 0 {
			head += ": did you mean " + strings.Join(f, " or ") + "?"
		}
		return &Error{Exit: ExitUsage, Kind: "usage", Msg: head + " (see ferry help)", Err: err}
	}
	for _, p := range []string{"unknown command ", "unknown flag", "unknown shorthand flag", "invalid argument ", "flag needs an argument", "accepts ", "requires at least ", "requires at most ", "accepts between "} {
		if strings.HasPrefix(msg, p) {
			return &Error{Exit: ExitUsage, Kind: "usage", Msg: msg + " (see ferry help)", Err: err}
		}
	}
	return &Error{Exit: ExitError, Kind: "error", Msg: msg, Err: err}
}

// Report writes err for a person (or as JSON when the command line asked
// for --json) to w, and returns the process's exit code.
func Report(w io.Writer, err error, args []string) int {
	if err == nil {
		return ExitOK
	}
	e := classify(err)
	if wantsJSON(args) {
		b, _ := json.Marshal(jsonError{Error: jsonErrorBody{Kind: e.Kind, Message: e.Msg}, Exit: e.Exit})
		fmt.Fprintf(w, "%s\n", b)
	} else {
		fmt.Fprintln(w, "ferry:", disp(oneLine(e.Msg)))
	}
	if os.Getenv("FERRY_DEBUG") == "1" && e.Err != nil { // for a bug report: the cause, on a line of its own
		fmt.Fprintln(w, "ferry: debug:", oneLine(e.Err.Error()))
	}
	return e.Exit
}

type jsonError struct {
	Error jsonErrorBody `json:"error"`
	Exit  int           `json:"exit"`
}

type jsonErrorBody struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// wantsJSON reports whether the command line has --json before any "--".
func wantsJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "--json=true", "--json=1":
			return true
		}
	}
	return false
}

// oneLine keeps a message on one line.
func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\r", " ")
	return strings.ReplaceAll(s, "\n", " ")
}
