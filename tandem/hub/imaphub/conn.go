package imaphub

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// conn is one IMAP connection, authenticated. It is not safe for concurrent
// use; Store serializes its use. After any error that leaves the stream in
// an unknown state the conn is broken and must be closed.
type conn struct {
	nc       net.Conn     // tc, or TLS over tc
	tc       *timeoutConn // the TCP connection, with per-I/O deadlines
	rd       reader
	w        *bufio.Writer
	tagN     int
	caps     map[string]bool
	broken   error
	qresync  bool // ENABLE QRESYNC succeeded
	selected bool // a SELECT succeeded on this connection
	// selMailbox and selValidity are the mailbox the last SELECT opened
	// and its UIDVALIDITY; selValidity is 0 when none is selected.
	selMailbox  string
	selValidity uint32
	gone        bool // the server closed the connection (EOF, reset, BYE)
}

// statusError is a tagged NO or BAD.
type statusError struct {
	cmd    string
	status string
	code   string
	text   string
}

func (e *statusError) Error() string {
	s := fmt.Sprintf("imaphub: %s: %s", e.cmd, e.status)
	if e.code != "" {
		s += " [" + e.code + "]"
	}
	return s + " " + e.text
}

// Is makes a BAD (the server calls the command malformed) match
// hub.ErrProtocol; a NO is a refusal, not a protocol error.
//
// A NO to LOGIN or AUTHENTICATE matches hub.ErrAuth: the server refused the
// credential (§13.3).
//
// A NO whose code says the server failed for now (see transient) matches
// hub.ErrUnavailable instead, whatever the command: it is neither a
// refused credential nor a missing folder.
func (e *statusError) Is(target error) bool {
	switch target {
	case hub.ErrProtocol:
		return e.status == "BAD"
	case hub.ErrAuth:
		return e.cmd == "login" && e.status == "NO" && !e.transient()
	case hub.ErrUnavailable:
		return e.transient()
	}
	return false
}

// transient reports whether e is a NO with a response code of RFC 5530
// saying the server could not do it now, not that it never will:
// SERVERBUG (Dovecot's "Internal error occurred" under load), UNAVAILABLE,
// INUSE and LIMIT. Such a call is tried again after a pause
// (docs/decisions/tandem-hub-transient.md).
func (e *statusError) transient() bool {
	if e.status != "NO" {
		return false
	}
	for _, code := range []string{"SERVERBUG", "UNAVAILABLE", "INUSE", "LIMIT"} {
		if e.hasCode(code) {
			return true
		}
	}
	return false
}

// refusal returns err's tagged NO unless it is transient: a server's
// lasting "no" to the command.
func refusal(err error) (*statusError, bool) {
	var se *statusError
	if errors.As(err, &se) && se.status == "NO" && !se.transient() {
		return se, true
	}
	return nil, false
}

// isTransient reports whether err is a server's answer that it failed for
// now (statusError.transient): worth the same call again after a pause.
func isTransient(err error) bool {
	var se *statusError
	return errors.As(err, &se) && se.transient()
}

// hasCode reports whether the response code starts with name.
func (e *statusError) hasCode(name string) bool {
	return strings.EqualFold(e.code, name) || strings.HasPrefix(strings.ToUpper(e.code), name+" ")
}

// dial connects, reads the greeting, upgrades to TLS as cfg says, logs in
// and reads the capabilities. A failure to reach the server is a
// *hub.UnavailableError; a certificate that does not verify is not (it is
// no blip: retrying will not help).
func dial(ctx context.Context, cfg *Config) (*conn, error) {
	if err := cfg.checkPlaintext(); err != nil {
		return nil, err
	}
	raw, err := cfg.dialTCP(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("imaphub: connect %s: %w", cfg.Addr, ctx.Err())
		}
		return nil, &hub.UnavailableError{Op: "connect " + cfg.Addr, Err: err}
	}
	c := &conn{tc: newTimeoutConn(raw, cfg.replyTimeout())}
	c.use(c.tc)
	if cfg.security() == ImplicitTLS {
		if err := c.handshake(ctx, cfg); err != nil {
			raw.Close()
			return nil, err
		}
	}
	if err := c.setup(ctx, cfg); err != nil {
		raw.Close()
		return nil, err
	}
	return c, nil
}

// use makes nc the connection commands are read from and written to.
func (c *conn) use(nc net.Conn) {
	c.nc = nc
	c.rd = reader{r: bufio.NewReaderSize(nc, 64<<10)}
	c.w = bufio.NewWriterSize(nc, 64<<10)
}

// handshake runs the TLS handshake over c.tc.
func (c *conn) handshake(ctx context.Context, cfg *Config) error {
	tc := tls.Client(c.tc, cfg.tlsConfig())
	if err := tc.HandshakeContext(ctx); err != nil {
		var cv *tls.CertificateVerificationError
		var rec tls.RecordHeaderError
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("imaphub: TLS with %s: %w", cfg.Addr, ctx.Err())
		case errors.As(err, &cv), errors.As(err, &rec):
			return fmt.Errorf("imaphub: TLS with %s: the server's certificate is not valid for it (%w)", cfg.Addr, err)
		}
		return &hub.UnavailableError{Op: "TLS with " + cfg.Addr, Err: err}
	}
	c.use(tc)
	return nil
}

func (c *conn) setup(ctx context.Context, cfg *Config) error {
	stop := c.watchContext(ctx)
	defer stop()
	greet, err := c.rd.readResponse()
	if err != nil {
		return c.ioFail(ctx, "greeting", err)
	}
	if greet.tag != "*" || (greet.status != "OK" && greet.status != "PREAUTH") {
		return c.fail("greeting", fmt.Errorf("unexpected greeting %s %s", greet.status, greet.text))
	}
	if cfg.security() == StartTLS {
		if greet.status == "PREAUTH" {
			return &hub.ProtocolError{Op: "starttls", Msg: "the server sent PREAUTH: STARTTLS is impossible on this connection"}
		}
		if err := c.startTLS(ctx, cfg, greet); err != nil {
			return err
		}
		greet = nil // capabilities must be asked again (RFC 9051 §6.2.1)
	}
	if greet == nil || greet.status == "OK" {
		if err := c.login(ctx, cfg, greet); err != nil {
			return err
		}
	}
	if err := c.capability(ctx); err != nil {
		return err
	}
	for _, need := range []string{"UIDPLUS", "IDLE"} { // required, §10.3
		if !c.caps[need] {
			return &hub.ProtocolError{Op: "login", Msg: "server lacks the required extension " + need + " (§10.3): this server cannot be a Tandem hub"}
		}
	}
	if c.caps["QRESYNC"] && !cfg.DisableQRESYNC {
		err := c.cmd(ctx, "ENABLE", "ENABLE QRESYNC", func(r *response) error {
			if r.name == "ENABLED" {
				for _, a := range r.args {
					if s, _ := str(a); strings.EqualFold(s, "QRESYNC") {
						c.qresync = true
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// startTLS runs STARTTLS (which the server must offer) and the handshake.
func (c *conn) startTLS(ctx context.Context, cfg *Config, greet *response) error {
	if err := c.greetingCaps(ctx, greet); err != nil {
		return err
	}
	if !c.caps["STARTTLS"] {
		return &hub.ProtocolError{Op: "starttls", Msg: "the server does not offer STARTTLS (use implicit TLS on port 993)"}
	}
	if err := c.cmd(ctx, "starttls", "STARTTLS", nil); err != nil {
		return err
	}
	if c.rd.r.Buffered() > 0 || len(c.rd.seg) > 0 {
		// Bytes after the OK, before the handshake, were injected by
		// someone on the path (RFC 9051 §6.2.1 says to discard them;
		// refusing is safer).
		return &hub.ProtocolError{Op: "starttls", Msg: "data after the STARTTLS answer"}
	}
	return c.handshake(ctx, cfg)
}

// greetingCaps reads the capabilities from the greeting's CAPABILITY code,
// or with a CAPABILITY command.
func (c *conn) greetingCaps(ctx context.Context, greet *response) error {
	c.caps = map[string]bool{}
	if greet != nil {
		if name, list, ok := strings.Cut(greet.code, " "); ok && strings.EqualFold(name, "CAPABILITY") {
			for _, capa := range strings.Fields(list) {
				c.caps[strings.ToUpper(capa)] = true
			}
			return nil
		}
	}
	return c.capability(ctx)
}

// login authenticates (§10.3): LOGIN, or AUTHENTICATE PLAIN (RFC 4616)
// where the server has disabled LOGIN. The capabilities come from the
// greeting's CAPABILITY code, or from a CAPABILITY command.
func (c *conn) login(ctx context.Context, cfg *Config, greet *response) error {
	if err := c.greetingCaps(ctx, greet); err != nil {
		return err
	}
	if !c.caps["LOGINDISABLED"] {
		return c.cmd(ctx, "login", "LOGIN "+quote(cfg.User)+" "+quote(cfg.Password), nil)
	}
	if !c.caps["AUTH=PLAIN"] {
		return &hub.ProtocolError{Op: "login", Msg: "the server disables LOGIN and offers no AUTHENTICATE PLAIN (use TLS)"}
	}
	resp := base64.StdEncoding.EncodeToString([]byte("\x00" + cfg.User + "\x00" + cfg.Password))
	if c.caps["SASL-IR"] {
		return c.cmd(ctx, "login", "AUTHENTICATE PLAIN "+resp, nil)
	}
	tag := c.nextTag()
	c.w.WriteString(tag + " AUTHENTICATE PLAIN\r\n")
	if err := c.w.Flush(); err != nil {
		return c.ioFail(ctx, "login", err)
	}
	r, err := c.rd.readResponse()
	if err != nil {
		return c.ioFail(ctx, "login", err)
	}
	if r.tag != "+" {
		return c.fail("login", fmt.Errorf("AUTHENTICATE PLAIN answered %s %s", r.status, r.text))
	}
	c.w.WriteString(resp + "\r\n")
	if err := c.w.Flush(); err != nil {
		return c.ioFail(ctx, "login", err)
	}
	return c.complete(ctx, "login", tag, nil)
}

func (c *conn) capability(ctx context.Context) error {
	c.caps = map[string]bool{}
	return c.cmd(ctx, "CAPABILITY", "CAPABILITY", func(r *response) error {
		if r.name == "CAPABILITY" {
			for _, a := range r.args {
				if s, ok := str(a); ok {
					c.caps[strings.ToUpper(s)] = true
				}
			}
		}
		return nil
	})
}

// watchContext makes ctx's end (and deadline) interrupt blocked I/O. The
// conn is broken afterwards if I/O was interrupted.
func (c *conn) watchContext(ctx context.Context) (stop func()) {
	// Only the AfterFunc sets a deadline: it runs after ctx.Err() is set,
	// so an interrupted read can tell a cancelled context from a timeout.
	c.tc.resume()
	cancel := context.AfterFunc(ctx, c.tc.interrupt)
	return func() { cancel() }
}

// fail marks the conn broken and returns a clear error for op: a
// *hub.UnavailableError when the connection itself failed (closed, reset,
// cut in the middle of an answer, silent past the reply timeout), a
// *hub.ProtocolError when the server sent something this package cannot
// read.
func (c *conn) fail(op string, err error) error {
	if c.broken == nil {
		c.broken = err
	}
	if isNetFailure(err) {
		var ne net.Error
		// gone: the server closed it (worth one retry on a fresh
		// connection); a timeout or an interrupt is not that.
		c.gone = !(errors.As(err, &ne) && ne.Timeout())
		return &hub.UnavailableError{Op: op, Err: err}
	}
	return &hub.ProtocolError{Op: op, Msg: "malformed response", Err: err}
}

// isNetFailure reports whether err is the connection failing rather than
// a bad answer: the stream ended (errTruncated: an answer cut short), a
// reset or closed socket, a timeout.
func isNetFailure(err error) bool {
	var ne net.Error
	return errors.Is(err, errTruncated) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.As(err, &ne)
}

// ioFail is fail for an I/O error, which may have been caused by ctx
// ending; then ctx's error is returned.
func (c *conn) ioFail(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		c.fail(op, err)
		return fmt.Errorf("imaphub: %s: %w", op, ctx.Err())
	}
	return c.fail(op, err)
}

func (c *conn) nextTag() string {
	c.tagN++
	return "t" + strconv.Itoa(c.tagN)
}

// cmd sends one command line (without CRLF) and reads responses until its
// tagged completion, passing each untagged response to handle (which may be
// nil). A tagged NO or BAD is returned as *statusError. A handler error ends
// the command: the rest of the answer is read and the error returned.
func (c *conn) cmd(ctx context.Context, op, line string, handle func(*response) error) error {
	if c.broken != nil {
		return fmt.Errorf("imaphub: %s: connection broken: %w", op, c.broken)
	}
	stop := c.watchContext(ctx)
	defer stop()
	tag := c.nextTag()
	c.w.WriteString(tag + " " + line + "\r\n")
	if err := c.w.Flush(); err != nil {
		return c.ioFail(ctx, op, err)
	}
	return c.complete(ctx, op, tag, handle)
}

// complete reads until the tagged response for tag.
func (c *conn) complete(ctx context.Context, op, tag string, handle func(*response) error) error {
	var herr error
	for {
		r, err := c.rd.readResponse()
		if err != nil {
			return c.ioFail(ctx, op, err)
		}
		switch {
		case r.tag == tag:
			if herr != nil {
				return herr
			}
			if r.status != "OK" {
				return &statusError{cmd: op, status: r.status, code: r.code, text: r.text}
			}
			if handle != nil && r.code != "" {
				return handle(r) // the tagged OK's code (APPENDUID) goes to the handler too
			}
			return nil
		case r.tag == "*" && r.status == "BYE":
			return c.bye(op, r)
		case r.tag == "*":
			if handle != nil && herr == nil {
				herr = handle(r)
			}
		case r.tag == "+":
			return c.fail(op, errors.New("unexpected continuation request"))
		default:
			return c.fail(op, fmt.Errorf("response for unknown tag %q", r.tag))
		}
	}
}

// bye handles an untagged BYE: the server ends the session (shutdown,
// idle logout, a deleted folder on Dovecot). It is a
// *hub.UnavailableError: a fresh connection may work.
func (c *conn) bye(op string, r *response) error {
	err := fmt.Errorf("%w (BYE %s)", errBye, r.text)
	c.fail(op, err)
	c.gone = true
	return &hub.UnavailableError{Op: op, Err: err}
}

// errBye is matched by the error of a session the server ended.
var errBye = errors.New("the server ended the session")

// interrupt makes blocked and future I/O on c fail at once; it may be
// called from any goroutine.
func (c *conn) interrupt() { c.tc.interrupt() }

func (c *conn) close() error {
	return c.nc.Close()
}
