package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/internal/outdir"
	"github.com/chaoskit/chaoskit/internal/reach"
)

// RollbackResult reports what Rollback did for one run directory.
type RollbackResult struct {
	Dir      string
	Control  string
	Disabled []string
	// Gone says nothing listens at Control any more (connections are
	// refused): the service has stopped, and the faults, which live in its
	// process, went with it. (A target chaoskit started is killed with it.)
	Gone bool
}

// Rollback disables every fault recorded in the run directories at or below
// dir. It is what `chaoskit rollback` runs after a run was killed before it
// could clean up. Entries those runs left in the pending index of stateDir
// (see Options.StateDir) go too. A record's control endpoint beyond loopback
// is reached only when allowHosts (the command's --allow-host) names its
// host: the record, a file, cannot grant that consent itself.
func Rollback(ctx context.Context, dir, stateDir string, allowHosts []string) ([]RollbackResult, error) {
	allow, err := reach.New(allowHosts)
	if err != nil {
		return nil, err
	}
	var records []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == FaultRecord {
			records = append(records, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(records) == 0 {
		return nil, fmt.Errorf("%s holds no run directory (no %s found)", dir, FaultRecord)
	}
	var out []RollbackResult
	var errs []error
	for _, rec := range records {
		fr, err := readRecord(rec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		res, err := rollbackRecord(ctx, fr, allow)
		res.Dir = filepath.Dir(rec)
		out = append(out, res)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// The record now says nothing is left on.
		fr.Points = nil
		_ = writeJSON(rec, fr)
		if stateDir != "" && fr.Control != "" {
			pending := pendingFile(stateDir, fr.Control)
			if pr, err := readRecord(pending); err == nil && samePath(pr.Dir, res.Dir) {
				_ = os.Remove(pending)
			}
		}
	}
	return out, errors.Join(errs...)
}

// maxFaultRecord bounds a fault record as read back: it lists the faults
// of one run.
const maxFaultRecord = 16 << 20

func readRecord(path string) (faultRecord, error) {
	var fr faultRecord
	data, err := outdir.ReadFile(path, maxFaultRecord)
	if err != nil {
		return fr, err
	}
	if err := json.Unmarshal(data, &fr); err != nil {
		return fr, fmt.Errorf("%s: %w", path, err)
	}
	return fr, nil
}

func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// rollbackRecord disables the points a record says may still be on and
// the endpoint lists as on. (If the endpoint cannot list them, it tries
// them all.) It reaches the control endpoint only on loopback or a host
// allow allows.
func rollbackRecord(ctx context.Context, fr faultRecord, allow *reach.Policy) (RollbackResult, error) {
	res := RollbackResult{Control: fr.Control}
	if fr.Control == "" || len(fr.Points) == 0 {
		return res, nil
	}
	if err := checkControlAddr(fr.Control, allow); err != nil {
		return res, fmt.Errorf("%w: the fault record names it, and chaoskit rolls back faults only of services on this machine or on a host given with --allow-host (was the record edited?)", err)
	}
	client := ControlClient(controlTimeout, allow)
	defer client.CloseIdleConnections()
	// A service chaoskit started died with the run that started it (its
	// supervisor saw to that), and its token with it; one chaoskit did not
	// start takes the token chaoskit was given.
	ctrl := &inject.HTTPController{Base: normalizeURL(fr.Control), Client: client, Token: os.Getenv(inject.TokenEnv)}
	points := fr.Points
	var active map[string]string
	err := disableRetry.do(ctx, func(c context.Context) (err error) {
		active, err = ctrl.Active(c)
		return err
	})
	if errors.Is(err, syscall.ECONNREFUSED) {
		res.Gone = true
		return res, nil
	}
	if err == nil {
		points = nil
		for _, p := range fr.Points {
			if _, on := active[p]; on {
				points = append(points, p)
			}
		}
	}
	var errs []error
	for _, p := range points {
		err := disableRetry.do(ctx, func(c context.Context) error { return ctrl.Disable(c, p) })
		if err != nil {
			if errors.Is(err, inject.ErrUnreachable) {
				err = fmt.Errorf("%s: %w (if the service has stopped, nothing is left enabled)", p, err)
			}
			errs = append(errs, err)
			continue
		}
		res.Disabled = append(res.Disabled, p)
	}
	return res, errors.Join(errs...)
}

// rollbackPending undoes what a killed run left on at control, as recorded
// in the pending index of stateDir, reaching only where allow allows. It
// returns what it disabled.
func rollbackPending(ctx context.Context, stateDir, control string, allow *reach.Policy) (RollbackResult, error) {
	if stateDir == "" || control == "" {
		return RollbackResult{}, nil
	}
	path := pendingFile(stateDir, control)
	fr, err := readRecord(path)
	if errors.Is(err, fs.ErrNotExist) {
		return RollbackResult{}, nil
	}
	if err != nil {
		_ = os.Remove(path)
		return RollbackResult{}, err
	}
	res, err := rollbackRecord(ctx, fr, allow)
	res.Dir = fr.Dir
	if err == nil {
		_ = os.Remove(path)
		if fr.Dir != "" {
			if rec, e := readRecord(filepath.Join(fr.Dir, FaultRecord)); e == nil {
				rec.Points = nil
				_ = writeJSON(filepath.Join(fr.Dir, FaultRecord), rec)
			}
		}
	}
	return res, err
}
