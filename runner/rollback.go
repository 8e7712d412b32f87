package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/chaoskit/chaoskit/inject"
)

// RollbackResult reports what Rollback did for one run directory.
type RollbackResult struct {
	Dir      string
	Control  string
	Disabled []string
}

// Rollback disables every fault recorded in the run directories at or below
// dir. It is what `chaoskit rollback` runs after a run was killed before it
// could clean up.
func Rollback(ctx context.Context, dir string) ([]RollbackResult, error) {
	var records []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
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
		data, err := os.ReadFile(rec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var fr faultRecord
		if err := json.Unmarshal(data, &fr); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", rec, err))
			continue
		}
		res := RollbackResult{Dir: filepath.Dir(rec), Control: fr.Control}
		if fr.Control == "" || len(fr.Points) == 0 {
			out = append(out, res)
			continue
		}
		ctrl := inject.NewHTTPController(fr.Control)
		for _, p := range fr.Points {
			actx, cancel := context.WithTimeout(ctx, 3*time.Second)
			err := ctrl.Disable(actx, p)
			cancel()
			if err != nil {
				if errors.Is(err, inject.ErrUnreachable) {
					// The service is gone, and its faults with it.
					err = fmt.Errorf("%s: %w (if the service has stopped, nothing is left enabled)", p, err)
				}
				errs = append(errs, err)
				continue
			}
			res.Disabled = append(res.Disabled, p)
		}
		out = append(out, res)
	}
	return out, errors.Join(errs...)
}
