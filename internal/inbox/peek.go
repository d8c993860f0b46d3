package inbox

import (
	"context"
	"fmt"
)

// Peek returns the message with id (in flight or not) with its whole
// body, leaving it in the inbox: the operator reads it without taking it
// from the agent. ErrNotFound if no message has id.
func (in *Inbox) Peek(ctx context.Context, id int64) (Delivered, error) {
	ms, err := in.st.Messages(ctx, 0, true)
	if err != nil {
		return Delivered{}, err
	}
	for _, m := range ms {
		if m.ID == id {
			return Delivered{Message: m, Body: in.body(m)}, nil
		}
	}
	return Delivered{}, fmt.Errorf("id %d: no message in the inbox has it: %w", id, ErrNotFound)
}
