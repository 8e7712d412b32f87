package shed_test

import (
	"context"
	"fmt"

	"github.com/chaoskit/chaoskit/breakerimpl/shed"
)

func ExampleNew() {
	// A real service leaves CPU nil (this process's cgroup, sampled every
	// 250 ms) and calls Close on shutdown.
	s := shed.New(shed.Settings{Name: "api", CPU: newCPU(0.3)})
	defer s.Close()
	p, err := s.Allow(context.Background())
	if err != nil { // shed.ErrOverloaded: answer 503 at once
		return
	}
	var handlerErr error // ... serve the request ...
	p.Done(handlerErr)
	fmt.Println(s.Snapshot().Dropped)
	// Output: 0
}

func ExampleNewSampler() {
	src, err := shed.SystemCPU() // cgroup v2, v1, or /proc/stat
	if err != nil {
		fmt.Println(err)
		return
	}
	sm := shed.NewSampler(shed.SamplerSettings{Source: src})
	defer sm.Stop()
	u := sm.Usage() // 0 until the second reading, then a moving average
	fmt.Println(u >= 0 && u <= 1)
	// Output: true
}
