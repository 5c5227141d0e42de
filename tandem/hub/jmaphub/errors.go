package jmaphub

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// Sentinel errors. Functions wrap them with %w and detail; test with
// errors.Is. An answer the binding cannot use at all (truncated or invalid
// JSON, a body that is not a JMAP Response, a missing or unexpected method
// response, a session without the mail capability) is a *hub.ProtocolError,
// matching hub.ErrProtocol. No error changes a caller's cursor.
var (
	// ErrHTTP: the server answered with an HTTP status this binding does not
	// accept; the concrete *HTTPError holds the status and problem type.
	ErrHTTP = errors.New("jmaphub: HTTP error from the JMAP server")
	// ErrMethod: a method call got an "error" response (RFC 8620 §3.6.2);
	// the concrete *MethodError holds its type.
	ErrMethod = errors.New("jmaphub: JMAP method error")
	// ErrSetFailed: an Email/set or Mailbox/set reported an item as
	// notCreated or notDestroyed (RFC 8620 §5.3); the concrete *SetError
	// holds the SetError type.
	ErrSetFailed = errors.New("jmaphub: JMAP set failed")
	// ErrNoMailbox: the Tandem mailbox could not be found or created (§10.2).
	// Errors that match it match hub.ErrNoFolder too.
	ErrNoMailbox = fmt.Errorf("jmaphub: no Tandem mailbox: %w", hub.ErrNoFolder)
)

// HTTPError is an HTTP answer other than success, with the RFC 7807 problem
// type when the server sent one (RFC 8620 §3.6.1). It matches ErrHTTP.
type HTTPError struct {
	Status int    // HTTP status code
	Type   string // problem "type", e.g. urn:ietf:params:jmap:error:limit; may be empty
	Detail string // problem "detail" or a prefix of the body; may be empty
}

func (e *HTTPError) Error() string {
	s := fmt.Sprintf("jmaphub: HTTP %d", e.Status)
	if e.Type != "" {
		s += " " + e.Type
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Is reports whether target is ErrHTTP, or hub.ErrAuth for 401 and 403:
// the server refused the credential (§13.3).
//
// A 5xx status or 429 (Too Many Requests) also matches hub.ErrUnavailable:
// the server is there but cannot serve now; retrying later may succeed.
func (e *HTTPError) Is(target error) bool {
	return target == ErrHTTP || (target == hub.ErrAuth && (e.Status == 401 || e.Status == 403)) ||
		(target == hub.ErrUnavailable && (e.Status >= 500 || e.Status == 429))
}

// MethodError is a method-level error response (RFC 8620 §3.6.2), such as
// cannotCalculateChanges or invalidArguments. It matches ErrMethod.
type MethodError struct {
	Method      string // the method that was called, e.g. "Email/changes"
	Type        string // the error "type"
	Description string // the optional "description"
}

func (e *MethodError) Error() string {
	s := fmt.Sprintf("jmaphub: %s: %s", e.Method, e.Type)
	if e.Description != "" {
		s += ": " + e.Description
	}
	return s
}

// Is reports whether target is ErrMethod, or hub.ErrUnavailable for
// serverFail and serverUnavailable (RFC 8620 §3.6.2): the server could not
// do it now, and the call made no change.
func (e *MethodError) Is(target error) bool {
	return target == ErrMethod || (target == hub.ErrUnavailable && e.transient())
}

func (e *MethodError) transient() bool {
	return e.Type == "serverFail" || e.Type == "serverUnavailable"
}

// isTransient reports whether err is a server's answer that it failed for
// now: an HTTP 5xx or 429, or a serverFail or serverUnavailable method
// error. A transport failure (refused, reset, silent) is hub.ErrUnavailable
// too, but is not tried again here: the caller decides
// (docs/decisions/tandem-hub-transient.md).
func isTransient(err error) bool {
	var he *HTTPError
	var me *MethodError
	return (errors.As(err, &he) && errors.Is(he, hub.ErrUnavailable)) || (errors.As(err, &me) && me.transient())
}

// retryable reports whether the request of calls may be sent again after
// err: a transient answer, and not a method error that followed a /set
// call in the same request (that /set may have changed the server; its
// effect is decoded, and the caller decides).
func retryable(err error, calls []call) bool {
	if !isTransient(err) {
		return false
	}
	var me *MethodError
	if !errors.As(err, &me) {
		return true // the whole request failed with an HTTP status
	}
	for _, cl := range calls {
		if cl.Name == me.Method {
			return true
		}
		if strings.HasSuffix(cl.Name, "/set") {
			return false
		}
	}
	return true
}

// SetError is an item the server did not create, update or destroy (RFC 8620
// §5.3). It matches ErrSetFailed.
type SetError struct {
	Method      string // "Email/set" or "Mailbox/set"
	ID          string // the creation id or the id that failed
	Type        string // the SetError "type", e.g. tooLarge, overQuota
	Description string
}

func (e *SetError) Error() string {
	s := fmt.Sprintf("jmaphub: %s %s: %s", e.Method, e.ID, e.Type)
	if e.Description != "" {
		s += ": " + e.Description
	}
	return s
}

// Is reports whether target is ErrSetFailed.
func (e *SetError) Is(target error) bool { return target == ErrSetFailed }

// badResponse is a server answer the binding cannot use (hub.ErrProtocol).
func badResponse(op, format string, args ...any) error {
	return &hub.ProtocolError{Op: op, Msg: fmt.Sprintf(format, args...)}
}
