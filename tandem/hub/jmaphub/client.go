package jmaphub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/internal/retry"
)

// Limits on what the binding reads from the server.
const (
	maxSessionBytes  = 1 << 20   // a session resource
	maxResponseBytes = 128 << 20 // one API response (fetch batches stay well below)
	maxBlobBytes     = 8 << 20   // one raw message (§10.6: messages stay under 1 MiB)
)

// client speaks JMAP over HTTP: session discovery, API requests, blob
// downloads. It holds no mutable state besides what cfg provides.
type client struct {
	cfg   Config
	http  *http.Client
	retry retry.Policy // for answers that the server failed for now
}

// do sends req. A transport failure (refused, reset, no answer before
// the request's deadline) is a *hub.UnavailableError; a request whose
// context was cancelled returns the cancellation.
func (c *client) do(req *http.Request) (*http.Response, error) {
	if c.cfg.Username != "" || c.cfg.Password != "" {
		req.SetBasicAuth(c.cfg.Username, c.cfg.Password)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		op := req.Method + " " + req.URL.Redacted()
		if errors.Is(req.Context().Err(), context.Canceled) {
			return nil, fmt.Errorf("jmaphub: %s: %w", op, err)
		}
		return nil, &hub.UnavailableError{Op: op, Err: err}
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, httpError(resp)
	}
	return resp, nil
}

// httpError reads an RFC 7807 problem (RFC 8620 §3.6.1) if there is one.
func httpError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	e := &HTTPError{Status: resp.StatusCode}
	var problem struct {
		Type   string `json:"type"`
		Detail string `json:"detail"`
	}
	if json.Unmarshal(body, &problem) == nil && problem.Type != "" {
		e.Type, e.Detail = problem.Type, problem.Detail
	} else {
		e.Detail = strconv.QuoteToASCII(string(body[:min(len(body), 200)]))
	}
	return e
}

// readBody reads at most limit bytes; a longer body is a bad answer. A
// body cut short (the connection failed) is a *hub.UnavailableError.
func readBody(resp *http.Response, limit int64, op string) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		if errors.Is(resp.Request.Context().Err(), context.Canceled) {
			return nil, fmt.Errorf("jmaphub: %s: %w", op, err)
		}
		return nil, &hub.UnavailableError{Op: op + ": reading the answer", Err: err}
	}
	if int64(len(body)) > limit {
		return nil, badResponse(op, "answer longer than %d bytes", limit)
	}
	return body, nil
}

// invocation is one method call or response: [name, arguments, callId]
// (RFC 8620 §3.2).
type invocation struct {
	Name   string
	Args   json.RawMessage
	CallID string
}

func (inv invocation) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{inv.Name, inv.Args, inv.CallID})
}

func (inv *invocation) UnmarshalJSON(b []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	if len(parts) != 3 {
		return fmt.Errorf("invocation has %d elements, want 3", len(parts))
	}
	if err := json.Unmarshal(parts[0], &inv.Name); err != nil {
		return fmt.Errorf("invocation name: %w", err)
	}
	if err := json.Unmarshal(parts[2], &inv.CallID); err != nil {
		return fmt.Errorf("invocation call id: %w", err)
	}
	if len(parts[1]) == 0 || parts[1][0] != '{' {
		return fmt.Errorf("invocation arguments are not an object")
	}
	inv.Args = parts[1]
	return nil
}

// call is one method call with its arguments and the struct its response
// arguments are decoded into.
type call struct {
	Name string // e.g. "Email/changes"
	Args any    // marshalled to the arguments object
	Resp any    // pointer the response arguments are decoded into; nil to ignore
}

// request sends the calls in one API request (RFC 8620 §3.3) and decodes each
// call's response. A method "error" response becomes a *MethodError; a
// missing or mismatched response, or a body that is not a Response object,
// is ErrBadResponse. Results are written into the Resp targets only when the
// whole answer is good.
//
// An answer that the server failed for now (HTTP 5xx or 429, serverFail,
// serverUnavailable) sends the request again after a pause, within ctx
// (retry.Policy; see retryable).
func (c *client) request(ctx context.Context, s *session, calls ...call) error {
	return c.retry.Do(ctx, func(err error) bool { return retryable(err, calls) }, func() error {
		return c.requestOnce(ctx, s, calls...)
	})
}

// requestOnce is one try of request.
func (c *client) requestOnce(ctx context.Context, s *session, calls ...call) error {
	if len(calls) == 0 {
		return nil
	}
	if len(calls) > s.maxCalls {
		return badResponse(calls[0].Name, "the server allows %d method calls per request; this request needs %d", s.maxCalls, len(calls))
	}
	req := struct {
		Using       []string     `json:"using"`
		MethodCalls []invocation `json:"methodCalls"`
	}{Using: []string{capCore, capMail}}
	for i, cl := range calls {
		args, err := json.Marshal(cl.Args)
		if err != nil {
			return fmt.Errorf("jmaphub: encoding %s: %w", cl.Name, err)
		}
		req.MethodCalls = append(req.MethodCalls, invocation{cl.Name, args, strconv.Itoa(i)})
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("jmaphub: encoding request: %w", err)
	}
	u, err := s.resolve(s.apiURL, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.requestTimeout())
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("jmaphub: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	resp, err := c.do(hreq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := readBody(resp, maxResponseBytes, calls[0].Name)
	if err != nil {
		return err
	}
	return decodeResponse(raw, calls)
}

// decodeResponse matches method responses to calls by call id and decodes
// each into its call's Resp. Every call whose response is good is decoded,
// even when another call failed; the first failure is returned (a
// *MethodError for a method "error" response, a *hub.ProtocolError for a
// missing or malformed one). Callers pass fresh Resp values and use them
// only as documented for the error case (the Tandem mailbox check).
func decodeResponse(raw []byte, calls []call) error {
	op := "request"
	if len(calls) > 0 {
		op = calls[0].Name
	}
	var r struct {
		MethodResponses *[]invocation `json:"methodResponses"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return badResponse(op, "API response: %v", err)
	}
	if r.MethodResponses == nil {
		return badResponse(op, "API response has no methodResponses")
	}
	byID := make(map[string][]invocation)
	for _, inv := range *r.MethodResponses {
		byID[inv.CallID] = append(byID[inv.CallID], inv)
	}
	var first error
	for i, cl := range calls {
		if err := decodeOne(byID[strconv.Itoa(i)], cl); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// decodeOne decodes the response to one call from the responses with its
// call id.
func decodeOne(resps []invocation, cl call) error {
	for _, inv := range resps {
		if inv.Name == "error" {
			var me struct {
				Type        string `json:"type"`
				Description string `json:"description"`
			}
			if err := json.Unmarshal(inv.Args, &me); err != nil || me.Type == "" {
				return badResponse(cl.Name, "malformed error response")
			}
			return &MethodError{Method: cl.Name, Type: me.Type, Description: me.Description}
		}
		if inv.Name != cl.Name {
			continue
		}
		if cl.Resp != nil {
			if err := json.Unmarshal(inv.Args, cl.Resp); err != nil {
				return badResponse(cl.Name, "response: %v", err)
			}
		}
		return nil
	}
	return badResponse(cl.Name, "no %s response", cl.Name)
}

// download fetches a blob (RFC 8620 §6.2) of at most maxBlobBytes; an
// HTTP 5xx or 429 is tried again after a pause, within ctx.
func (c *client) download(ctx context.Context, s *session, blobID string) ([]byte, error) {
	var body []byte
	err := c.retry.Do(ctx, isTransient, func() error {
		var err error
		body, err = c.downloadOnce(ctx, s, blobID)
		return err
	})
	return body, err
}

func (c *client) downloadOnce(ctx context.Context, s *session, blobID string) ([]byte, error) {
	u, err := s.resolve(s.downloadURL, map[string]string{
		"accountId": s.accountID, "blobId": blobID, "name": "message.eml", "type": "message/rfc822",
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.requestTimeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("jmaphub: %w", err)
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readBody(resp, maxBlobBytes, "download")
}
