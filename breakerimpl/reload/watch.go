package reload

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is the Debounce of WatchSettings that leave it zero.
const DefaultDebounce = 100 * time.Millisecond

// WatchSettings configures Watch.
//
// Log gets a line for every file applied (Info, "policy file applied") and
// every file refused (Error, "policy file refused; the settings in force
// stay", with the error naming file:line:column). Nil discards them.
//
// Debounce is how long Watch waits after a change for the writes that
// follow (an editor writes, then renames, then changes the mode) before it
// reads the file once; zero means DefaultDebounce, negative means none.
//
// OnReload, if set, is told the outcome of every reading after the first:
// nil for a file applied, the error for one refused.
type WatchSettings struct {
	Log      *slog.Logger
	Debounce time.Duration
	OnReload func(error)
}

// Watcher applies a policy file whenever it changes, until Close.
type Watcher struct {
	path    string
	targets *Targets
	cfg     WatchSettings
	fs      *fsnotify.Watcher
	done    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// Load reads the policy file at path and applies it to t.
func Load(path string, t *Targets) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	p, err := Parse(path, data)
	if err != nil {
		return err
	}
	return t.Apply(path, data, p)
}

// Watch applies the policy file at path to t, and again each time it
// changes, until Close. It returns an error, and watches nothing, if the
// file cannot be read or applied now: a service should not start on
// settings its operator did not mean. Later a bad file is refused, logged,
// and the settings in force stay.
func Watch(path string, t *Targets, s WatchSettings) (*Watcher, error) {
	if s.Log == nil {
		s.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.Debounce == 0 {
		s.Debounce = DefaultDebounce
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fs, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	// The directory, not the file: an editor's rename replaces the file.
	if err := fs.Add(filepath.Dir(abs)); err != nil {
		fs.Close()
		return nil, err
	}
	if err := Load(path, t); err != nil {
		fs.Close()
		return nil, err
	}
	s.Log.Info("policy file applied", "file", path)
	w := &Watcher{path: path, targets: t, cfg: s, fs: fs, done: make(chan struct{})}
	w.wg.Add(1)
	go w.loop(abs)
	return w, nil
}

// Close stops watching and waits for a reading under way to end.
func (w *Watcher) Close() error {
	var err error
	w.once.Do(func() {
		close(w.done)
		err = w.fs.Close()
		w.wg.Wait()
	})
	return err
}

func (w *Watcher) loop(abs string) {
	defer w.wg.Done()
	var (
		timer *time.Timer
		fire  <-chan time.Time
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-w.done:
			return
		case e, ok := <-w.fs.Events:
			if !ok {
				return
			}
			if filepath.Clean(e.Name) != abs || e.Op == fsnotify.Chmod {
				continue
			}
			if w.cfg.Debounce < 0 {
				w.reload()
				continue
			}
			if timer == nil {
				timer = time.NewTimer(w.cfg.Debounce)
			} else {
				timer.Reset(w.cfg.Debounce)
			}
			fire = timer.C
		case <-fire:
			fire = nil
			w.reload()
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			w.cfg.Log.Warn("policy file watch error", "file", w.path, "error", err.Error())
		}
	}
}

// Reload reads and applies the file now, as a change of it would, and
// returns the outcome (an admin's "reload"; package admin serves it).
func (w *Watcher) Reload() error { return w.reload() }

// reload reads and applies the file once, and logs and returns the
// outcome.
func (w *Watcher) reload() error {
	err := Load(w.path, w.targets)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// Removed, or between an editor's remove and create: nothing to
		// apply, and the settings in force stay.
		w.cfg.Log.Warn("policy file missing; the settings in force stay", "file", w.path)
	case err != nil:
		w.cfg.Log.Error("policy file refused; the settings in force stay", "file", w.path, "error", err.Error())
	default:
		w.cfg.Log.Info("policy file applied", "file", w.path)
	}
	if w.cfg.OnReload != nil {
		w.cfg.OnReload(err)
	}
	return err
}
