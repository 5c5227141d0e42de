package hub_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// A budget shared by a device's connections: two appends an hour at most.
// The third is refused with a *BudgetError, which matches ErrUnavailable:
// the caller tries again later, as after any failure of the server.
func ExampleRateBudget() {
	b := hub.NewRateBudget(hub.Rate{N: 10, Per: time.Minute}, hub.Rate{N: 2, Per: time.Hour})
	fmt.Println(b.Append(1), b.Append(1))
	err := b.Append(1)
	var be *hub.BudgetError
	fmt.Println(errors.Is(err, hub.ErrUnavailable), errors.As(err, &be) && be.What == "append")
	// Output:
	// <nil> <nil>
	// true true
}
