package retry_test

import (
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// autoClock is a fake clock on which every wait ends at once: a timer moves
// the clock to its deadline as it is made. It records the waits.
type autoClock struct {
	*clock.Fake
	waits []time.Duration
}

func newAutoClock() *autoClock { return &autoClock{Fake: clock.NewFake(time.Time{})} }

func (c *autoClock) NewTimer(d time.Duration) clock.Timer {
	c.waits = append(c.waits, d)
	t := c.Fake.NewTimer(d)
	c.Fake.Advance(d)
	return t
}
