package jmaphub

import (
	"context"
	"errors"
	"time"
)

// poll is Watch for servers without push: Email/changes every
// PollInterval, calling onChange when the Email state moved (§10.2 watch,
// fallback; decision: docs/decisions/tandem-hub-jmap-polling.md).
func (st *Store) poll(ctx context.Context, onChange func()) error {
	state, err := st.emailState(ctx)
	if err != nil {
		return err
	}
	onChange() // anything before this state was not seen by the caller's watch
	t := time.NewTicker(st.c.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		var r emailChangesResp
		err := st.request(ctx, call{"Email/changes", map[string]any{
			"accountId": st.s.accountID, "sinceState": state,
		}, &r})
		var me *MethodError
		if errors.As(err, &me) && (me.Type == "cannotCalculateChanges" || me.Type == "invalidArguments") {
			if state, err = st.emailState(ctx); err != nil {
				return err
			}
			onChange()
			continue
		}
		if err != nil {
			return wrapOp("watch", err)
		}
		if r.NewState == "" {
			return badResponse("Email/changes", "no newState")
		}
		if r.NewState != state || len(r.Created)+len(r.Updated)+len(r.Destroyed) > 0 {
			state = r.NewState
			onChange()
		}
	}
}

// emailState returns the account's current Email state (Email/get with no
// ids, RFC 8620 §5.1).
func (st *Store) emailState(ctx context.Context) (string, error) {
	var r struct {
		State string `json:"state"`
	}
	err := st.request(ctx, call{"Email/get", map[string]any{"accountId": st.s.accountID, "ids": []string{}}, &r})
	if err != nil {
		return "", wrapOp("watch", err)
	}
	if r.State == "" {
		return "", badResponse("Email/get", "no state")
	}
	return r.State, nil
}
