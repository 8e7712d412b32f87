package timeline

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/klauspost/compress/zstd"
)

// RequestsFile is the name of the compact request stream inside a run
// directory; the meta and events stay in FileName as JSON lines.
//
// The stream is a sequence of zstd frames (github.com/klauspost/compress),
// each holding one CBOR-encoded block (github.com/fxamacker/cbor, RFC 8949)
// of up to blockRequests requests in columns: send times and latencies as
// deltas, and every string (phases, targets, errors, header names and
// values, tag sets) and every body as a reference into tables that each
// block extends with the entries it introduces. A repeated string or body
// is stored once per run; a request in the common case is a handful of
// small integers, which zstd compresses further. Each frame stands alone:
// a crash loses only the requests not yet flushed, and a reader accepts a
// last frame cut short.
const RequestsFile = "requests.cbor.zst"

// blockRequests is how many requests a block holds at most; a block is
// also written by Flush (the runner flushes every second). Encoding and
// compressing a block is the recorder's longest step without a pause: at
// 1,024 requests it is a fraction of a millisecond, short enough not to
// keep one of a small machine's cores from the load generator for long.
const blockRequests = 1024

// Bounds on what the tables of one run hold, so that a service answering
// every request with a new body, a new header value or a new error (ids,
// timestamps, client ports) cannot grow the memory of the writer or of a
// reader with the run's length. Past them a string or body is written
// inline, in the block of the request that has it, and forgotten with the
// block.
// (Variables, so that tests can reach them with a few requests.)
var (
	maxTableEntries = 1 << 16
	maxTableBytes   = 32 << 20
	// maxBodyBytes bounds the body text a run keeps verbatim, in all: once
	// a run has kept this much, a new body keeps only its size and hash.
	maxBodyBytes = 256 << 20
)

// block is one frame of the request stream. Strings, Bodies and Sets
// extend the run's tables (ids continue from the previous block's); the
// In* lists hold this block's inline entries. A reference is 0 for none,
// k > 0 for table entry k, and -k for inline entry k of the block.
type block struct {
	_ struct{} `cbor:",toarray"`
	// Strings, Bodies and Sets are new table entries.
	Strings []string
	Bodies  []bodyEntry
	Sets    [][]int64
	// InStrings, InBodies and InSets are this block's inline entries.
	InStrings []string
	InBodies  []bodyEntry
	InSets    [][]int64
	// Seq is the Seq of the block's first request, SeqDelta the step
	// from each request to the next (1 in a runner's stream).
	Seq      uint64
	SeqDelta []int64
	// Time holds unix nanoseconds, the first absolute and every other the
	// difference from the one before; Latency nanoseconds.
	Time    []int64
	Latency []int64
	Status  []int64
	// Phase, Target, URL, Error and Tags are string references (URL 0: the
	// base URL followed by the target's path; Tags the tags joined by
	// commas, after the template's name written =NAME when the request
	// has one, see tagLabel); Headers a header-set reference (a set is name and value
	// string references, alternating); Body a body reference.
	Phase   []int64
	Target  []int64
	URL     []int64
	Error   []int64
	Tags    []int64
	Headers []int64
	Body    []int64
}

// bodyEntry is one response body: its size, its SHA-256 when the text is
// not kept, and its text when it is (at most MaxBody bytes, within the
// run's maxBodyBytes).
type bodyEntry struct {
	_    struct{} `cbor:",toarray"`
	Size int64
	Hash []byte
	Text string
}

// zstd encoders and decoders are costly to make and safe to reuse.
var (
	zstdEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	cborEnc, _     = cbor.EncOptions{}.EncMode()
	cborDec, _     = cbor.DecOptions{MaxArrayElements: 1 << 24}.DecMode()
)

// maxBlockBytes bounds the decoded size of one block a reader accepts:
// above the block the writer makes with every one of its blockRequests
// requests carrying a new body of MaxBody (16 MiB) and long new strings,
// far below what a few kilobytes of zstd can expand to. A decoder would
// otherwise buffer a string of any declared length. The CBOR decoder
// doubles its buffer as it reads: the bound costs at most about three
// times itself in memory.
var maxBlockBytes = int64(24 << 20)

// maxDecoderMemory bounds the zstd decoder's window and frame memory; the
// writer's frames use far less.
const maxDecoderMemory = 64 << 20

// blockLimit hands a CBOR decoder at most maxBlockBytes between two
// blocks (reset); past that, reading fails with ErrCorrupt.
type blockLimit struct {
	r    io.Reader
	read int64
}

func (b *blockLimit) Read(p []byte) (int, error) {
	if b.read >= maxBlockBytes {
		return 0, fmt.Errorf("%w: a block is larger than the %d MiB the writer makes", ErrCorrupt, maxBlockBytes>>20)
	}
	p = p[:min(int64(len(p)), maxBlockBytes-b.read)]
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

// table interns strings (or bodies, or header sets, by a key) for a
// RequestWriter, within maxTableEntries and maxTableBytes.
type table struct {
	ids   map[string]int64
	bytes int
}

func (t *table) lookup(key []byte) (int64, bool) {
	id, ok := t.ids[string(key)]
	return id, ok
}

// add enters key and returns its id, or 0 when the table is full.
func (t *table) add(key []byte, size int) int64 {
	if t.ids == nil {
		t.ids = map[string]int64{}
	}
	if len(t.ids) >= maxTableEntries || t.bytes+size > maxTableBytes {
		return 0
	}
	id := int64(len(t.ids) + 1)
	t.ids[string(key)] = id
	t.bytes += size
	return id
}

// RequestWriter streams requests in the compact form of RequestsFile. It
// is safe for concurrent use, though the runner calls it from one
// goroutine. As Writer does, it keeps the first write error and writes
// nothing after it.
type RequestWriter struct {
	mu      sync.Mutex
	w       io.Writer
	baseURL string
	strs    table
	bodies  table
	sets    table
	// bigBodies interns bodies over MaxBody by a maphash of their content:
	// their text is not kept, and hashing them beats keeping them as keys.
	bigBodies map[uint64]int64
	seed      maphash.Seed
	kept      int // body bytes kept verbatim
	// texts are the table bodies' kept texts, by id-1.
	texts    []string
	blk      block
	n        int
	lastTime int64
	lastSeq  uint64
	key      []byte
	names    []string
	refs     []int64
	out      []byte
	frame    []byte
	err      error
	written  int64
}

// NewRequestWriter returns a RequestWriter writing to w. baseURL is the
// address requests were sent to: a URL that is baseURL followed by the
// target's path is not stored.
func NewRequestWriter(w io.Writer, baseURL string) *RequestWriter {
	return &RequestWriter{w: w, baseURL: baseURL, seed: maphash.MakeSeed(), bigBodies: map[uint64]int64{}}
}

// Add records one request. body is the response body, whatever its size;
// q.Body, q.BodySize and q.BodyHash are ignored and q.Body is set to the
// text kept (shared with the writer's table: do not change it). Requests
// come in any order of Seq (the runner adds them as they complete, numbered
// as they were sent): each is stored as its difference from the one before.
func (w *RequestWriter) Add(q *Request, body []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	b := &w.blk
	if w.n == 0 {
		b.Seq = q.Seq
		b.SeqDelta = append(b.SeqDelta, 0)
		w.lastTime = 0
	} else {
		b.SeqDelta = append(b.SeqDelta, int64(q.Seq-w.lastSeq))
	}
	w.lastSeq = q.Seq
	t := q.Time.UnixNano()
	b.Time = append(b.Time, t-w.lastTime)
	w.lastTime = t
	b.Latency = append(b.Latency, int64(q.Latency))
	b.Status = append(b.Status, int64(q.Status))
	b.Phase = append(b.Phase, w.str(q.Phase))
	b.Target = append(b.Target, w.str(q.Target))
	url := int64(0)
	if q.URL != "" && q.URL != w.baseURL+requestPathOf(q.Target) {
		url = w.str(q.URL)
	}
	b.URL = append(b.URL, url)
	b.Error = append(b.Error, w.str(q.Error))
	tags := int64(0)
	if len(q.Tags) > 0 || q.Template != "" {
		tags = w.str(tagLabel(q.Tags, q.Template))
	}
	b.Tags = append(b.Tags, tags)
	b.Headers = append(b.Headers, w.headerSet(q.Headers))
	ref, text := w.body(body)
	b.Body = append(b.Body, ref)
	q.Body, q.BodySize, q.BodyHash = text, len(body), ""
	w.n++
	if w.n >= blockRequests {
		return w.flush()
	}
	return nil
}

// requestPathOf is the path of a target "GET /p/7".
func requestPathOf(target string) string {
	_, p, ok := strings.Cut(target, " ")
	if !ok {
		return target
	}
	return p
}

func (w *RequestWriter) str(s string) int64 {
	if s == "" {
		return 0
	}
	if id, ok := w.strs.ids[s]; ok {
		return id
	}
	if id := w.strs.add([]byte(s), len(s)); id > 0 {
		w.blk.Strings = append(w.blk.Strings, s)
		return id
	}
	w.blk.InStrings = append(w.blk.InStrings, s)
	return -int64(len(w.blk.InStrings))
}

// headerSet interns a request's kept headers, sorted by name.
func (w *RequestWriter) headerSet(h map[string]string) int64 {
	if len(h) == 0 {
		return 0
	}
	names := w.names[:0]
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	w.names = names
	refs := w.refs[:0]
	for _, k := range names {
		refs = append(refs, w.str(k), w.str(h[k]))
	}
	w.refs = refs
	inline := false
	w.key = w.key[:0]
	for _, r := range refs {
		inline = inline || r < 0
		w.key = binary.AppendVarint(w.key, r)
	}
	if !inline { // a set of inline strings cannot be a table entry
		if id, ok := w.sets.lookup(w.key); ok {
			return id
		}
		if id := w.sets.add(w.key, len(w.key)); id > 0 {
			w.blk.Sets = append(w.blk.Sets, slices.Clone(refs))
			return id
		}
	}
	w.blk.InSets = append(w.blk.InSets, slices.Clone(refs))
	return -int64(len(w.blk.InSets))
}

// body interns a body and returns its reference and the text kept.
func (w *RequestWriter) body(b []byte) (int64, string) {
	if len(b) == 0 {
		return 0, ""
	}
	if len(b) > MaxBody {
		h := maphash.Bytes(w.seed, b)
		if id, ok := w.bigBodies[h]; ok {
			return id, ""
		}
		sum := sha256.Sum256(b)
		e := bodyEntry{Size: int64(len(b)), Hash: sum[:]}
		if len(w.bigBodies) < maxTableEntries {
			if id := w.bodies.add(binary.AppendUvarint([]byte{0}, h), 0); id > 0 {
				w.bigBodies[h] = id
				w.blk.Bodies = append(w.blk.Bodies, e)
				w.texts = append(w.texts, "")
				return id, ""
			}
		}
		w.blk.InBodies = append(w.blk.InBodies, e)
		return -int64(len(w.blk.InBodies)), ""
	}
	if id, ok := w.bodies.lookup(b); ok {
		return id, w.texts[id-1]
	}
	e := bodyEntry{Size: int64(len(b))}
	if w.kept+len(b) <= maxBodyBytes {
		e.Text = string(b)
		w.kept += len(b)
	} else {
		sum := sha256.Sum256(b)
		e.Hash = sum[:]
	}
	if id := w.bodies.add(b, len(b)); id > 0 {
		w.blk.Bodies = append(w.blk.Bodies, e)
		w.texts = append(w.texts, e.Text)
		return id, e.Text
	}
	w.blk.InBodies = append(w.blk.InBodies, e)
	return -int64(len(w.blk.InBodies)), e.Text
}

// Flush writes the requests added since the last flush as one frame.
func (w *RequestWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flush()
}

func (w *RequestWriter) flush() error {
	if w.err != nil || w.n == 0 {
		return w.err
	}
	var err error
	w.out, err = appendBlock(w.out[:0], &w.blk)
	if err != nil {
		w.err = err
		return err
	}
	w.frame = zstdEncoder.EncodeAll(w.out, w.frame[:0])
	n, err := w.w.Write(w.frame)
	w.written += int64(n)
	if err != nil {
		w.err = err
		return err
	}
	w.blk.reset()
	w.n = 0
	return nil
}

func appendBlock(dst []byte, b *block) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	err := cborEnc.NewEncoder(buf).Encode(b)
	return buf.Bytes(), err
}

func (b *block) reset() {
	*b = block{
		SeqDelta: b.SeqDelta[:0], Time: b.Time[:0], Latency: b.Latency[:0], Status: b.Status[:0], Phase: b.Phase[:0],
		Target: b.Target[:0], URL: b.URL[:0], Error: b.Error[:0], Tags: b.Tags[:0], Headers: b.Headers[:0], Body: b.Body[:0],
	}
}

// Written is how many bytes the writer has written so far.
func (w *RequestWriter) Written() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

// Err returns the first write error, or nil.
func (w *RequestWriter) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close flushes, syncs the underlying writer when it can be (an *os.File)
// and closes it when it is an io.Closer. It returns the first error of the
// writer's life.
func (w *RequestWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flush()
	if s, ok := w.w.(interface{ Sync() error }); ok && w.err == nil {
		w.err = s.Sync()
	}
	if c, ok := w.w.(io.Closer); ok {
		if err := c.Close(); err != nil && w.err == nil {
			w.err = err
		}
	}
	return w.err
}

// requestReader decodes a request stream.
type requestReader struct {
	baseURL string
	strs    []string
	bodies  []decodedBody
	sets    []map[string]string
	// urls and tags cache what a table string derives: a target's URL, a
	// tag set split.
	urls map[int64]string
	tags map[int64]labels
}

// decodedBody is a body entry with its hash in hex.
type decodedBody struct {
	size int
	hash string
	text string
}

func decodeBody(e bodyEntry) decodedBody {
	d := decodedBody{size: int(e.Size), text: e.Text}
	if len(e.Hash) > 0 {
		d.hash = hex.EncodeToString(e.Hash)
	} else if e.Text != "" {
		sum := sha256.Sum256([]byte(e.Text))
		d.hash = hex.EncodeToString(sum[:])
	}
	return d
}

// ErrCorrupt is wrapped by errors about a request stream that does not
// decode anywhere but at its end.
var ErrCorrupt = errors.New("the request stream is corrupt")

// readRequests calls fn for each request of a stream written by a
// RequestWriter, in the order they were added. baseURL is the run's
// (Meta.BaseURL). A last frame cut short (a crash while writing) ends the
// stream; cut reports it. The *Request handed to fn, and its Headers and
// Tags, are reused and shared: fn must copy what it keeps.
func readRequests(r io.Reader, baseURL string, fn func(*Request) error) (cut bool, err error) {
	// Decoding runs in a goroutine of its own, a block ahead of fn: on two
	// cores, decoding and judging each get one. Three batches of a block's
	// requests go round, so the memory stays a few blocks'.
	type batch struct{ reqs []Request }
	full := make(chan *batch, 2)
	free := make(chan *batch, 3)
	for range 3 {
		free <- &batch{}
	}
	stop := make(chan struct{})
	var derr error
	var dcut bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(full)
		dcut, derr = decodeBlocks(r, baseURL, func() ([]Request, bool) {
			select {
			case b := <-free:
				return b.reqs[:0], true
			case <-stop:
				return nil, false
			}
		}, func(reqs []Request) bool {
			select {
			case full <- &batch{reqs: reqs}:
				return true
			case <-stop:
				return false
			}
		})
	})
	for b := range full {
		for i := range b.reqs {
			if err := fn(&b.reqs[i]); err != nil {
				close(stop)
				for range full {
				}
				wg.Wait()
				return false, err
			}
		}
		free <- b
	}
	wg.Wait()
	return dcut, derr
}

// decodeBlocks decodes the stream block by block: each block's requests
// are appended to a slice get hands out and handed to put. It stops when
// get or put says so.
func decodeBlocks(r io.Reader, baseURL string, get func() ([]Request, bool), put func([]Request) bool) (cut bool, err error) {
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxMemory(maxDecoderMemory), zstd.WithDecoderMaxWindow(maxDecoderMemory))
	if err != nil {
		return false, err
	}
	defer zr.Close()
	limit := &blockLimit{r: zr}
	dec := cborDec.NewDecoder(limit)
	rd := &requestReader{baseURL: baseURL, urls: map[int64]string{}, tags: map[int64]labels{}}
	var blk block
	var q Request
	for n := 0; ; n++ {
		blk.reset()
		// The decoder reads ahead: what it holds of the next block
		// counts against that block's bound too, so the bound is reset
		// to what it has buffered.
		limit.read = int64(dec.Buffered().(*bytes.Reader).Len())
		err := dec.Decode(&blk)
		switch {
		case errors.Is(err, io.EOF):
			return false, nil
		case errors.Is(err, io.ErrUnexpectedEOF):
			return true, nil
		case err != nil:
			return false, fmt.Errorf("%w: block %d: %v", ErrCorrupt, n+1, err)
		}
		reqs, ok := get()
		if !ok {
			return false, nil
		}
		if err := rd.block(&blk, &q, func(q *Request) error {
			reqs = append(reqs, *q)
			return nil
		}); err != nil {
			return false, err
		}
		if !put(reqs) {
			return false, nil
		}
	}
}

func (rd *requestReader) block(b *block, q *Request, fn func(*Request) error) error {
	rd.strs = append(rd.strs, b.Strings...)
	for _, e := range b.Bodies {
		rd.bodies = append(rd.bodies, decodeBody(e))
	}
	for _, refs := range b.Sets {
		rd.sets = append(rd.sets, rd.headers(b, refs))
	}
	n := len(b.Time)
	for _, col := range [][]int64{b.SeqDelta, b.Latency, b.Status, b.Phase, b.Target, b.URL, b.Error, b.Tags, b.Headers, b.Body} {
		if len(col) != n {
			return fmt.Errorf("%w: a block's columns differ in length", ErrCorrupt)
		}
	}
	seq, t := b.Seq, int64(0)
	var err error
	for i := range n {
		seq += uint64(b.SeqDelta[i])
		t += b.Time[i]
		*q = Request{Seq: seq, Time: time.Unix(0, t), Latency: time.Duration(b.Latency[i]), Status: int(b.Status[i])}
		if q.Phase, err = rd.str(b, b.Phase[i]); err != nil {
			return err
		}
		if q.Target, err = rd.str(b, b.Target[i]); err != nil {
			return err
		}
		q.Method, _, _ = strings.Cut(q.Target, " ")
		if q.URL, err = rd.url(b, b.URL[i], b.Target[i], q.Target); err != nil {
			return err
		}
		if q.Error, err = rd.str(b, b.Error[i]); err != nil {
			return err
		}
		if q.Tags, q.Template, err = rd.tagList(b, b.Tags[i]); err != nil {
			return err
		}
		if q.Headers, err = rd.set(b, b.Headers[i]); err != nil {
			return err
		}
		if err := rd.body(b, b.Body[i], q); err != nil {
			return err
		}
		if err := fn(q); err != nil {
			return err
		}
	}
	return nil
}

func badRef(what string, ref int64) error {
	return fmt.Errorf("%w: %s reference %d points nowhere", ErrCorrupt, what, ref)
}

func (rd *requestReader) str(b *block, ref int64) (string, error) {
	switch {
	case ref == 0:
		return "", nil
	case ref > 0 && ref <= int64(len(rd.strs)):
		return rd.strs[ref-1], nil
	case ref < 0 && -ref <= int64(len(b.InStrings)):
		return b.InStrings[-ref-1], nil
	}
	return "", badRef("string", ref)
}

func (rd *requestReader) url(b *block, ref, targetRef int64, target string) (string, error) {
	if ref != 0 {
		return rd.str(b, ref)
	}
	if targetRef > 0 {
		if u, ok := rd.urls[targetRef]; ok {
			return u, nil
		}
		u := rd.baseURL + requestPathOf(target)
		rd.urls[targetRef] = u
		return u, nil
	}
	return rd.baseURL + requestPathOf(target), nil
}

// tagLabel is how a request's tags and template name are stored: the
// tags joined by commas, after the name written =NAME (a tag never starts
// with = nor holds a comma; validation refuses them). A record written
// before templates had names holds the tags alone, and one read by such a
// chaoskit shows the name as a tag =NAME.
func tagLabel(tags []string, template string) string {
	s := strings.Join(tags, ",")
	if template == "" {
		return s
	}
	if s == "" {
		return "=" + template
	}
	return "=" + template + "," + s
}

// labels are a request's tags and template name, read back.
type labels struct {
	tags     []string
	template string
}

func (rd *requestReader) tagList(b *block, ref int64) ([]string, string, error) {
	if ref == 0 {
		return nil, "", nil
	}
	if l, ok := rd.tags[ref]; ok && ref > 0 {
		return l.tags, l.template, nil
	}
	s, err := rd.str(b, ref)
	if err != nil {
		return nil, "", err
	}
	var l labels
	if rest, ok := strings.CutPrefix(s, "="); ok {
		l.template, s, _ = strings.Cut(rest, ",")
	}
	if s != "" {
		l.tags = strings.Split(s, ",")
	}
	if ref > 0 {
		rd.tags[ref] = l
	}
	return l.tags, l.template, nil
}

func (rd *requestReader) headers(b *block, refs []int64) map[string]string {
	h := make(map[string]string, len(refs)/2)
	for i := 0; i+1 < len(refs); i += 2 {
		k, err1 := rd.str(b, refs[i])
		v, err2 := rd.str(b, refs[i+1])
		if err1 == nil && err2 == nil {
			h[k] = v
		}
	}
	return h
}

func (rd *requestReader) set(b *block, ref int64) (map[string]string, error) {
	switch {
	case ref == 0:
		return nil, nil
	case ref > 0 && ref <= int64(len(rd.sets)):
		return rd.sets[ref-1], nil
	case ref < 0 && -ref <= int64(len(b.InSets)):
		return rd.headers(b, b.InSets[-ref-1]), nil
	}
	return nil, badRef("header set", ref)
}

func (rd *requestReader) body(b *block, ref int64, q *Request) error {
	var d decodedBody
	switch {
	case ref == 0:
		return nil
	case ref > 0 && ref <= int64(len(rd.bodies)):
		d = rd.bodies[ref-1]
	case ref < 0 && -ref <= int64(len(b.InBodies)):
		d = decodeBody(b.InBodies[-ref-1])
	default:
		return badRef("body", ref)
	}
	q.Body, q.BodySize, q.BodyHash = d.text, d.size, d.hash
	return nil
}
