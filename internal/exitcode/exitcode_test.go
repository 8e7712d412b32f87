package exitcode

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestOf(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{nil, Pass},
		{errors.New("disk full"), Infra},
		{fmt.Errorf("run: %w", New(Invalid, "bad flag")), Invalid},
		{Wrap(Fail, errors.New("contracts did not pass")), Fail},
		{fmt.Errorf("stopped: %w", context.Canceled), Interrupted},
	} {
		if got := Of(tt.err); got != tt.want {
			t.Errorf("Of(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}
