package audit

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
)

// JUnitWriter writes the audit as JUnit XML: one testsuite per resource,
// one testcase per object and policy (classname the policy, name the
// object), a failure, error or skipped element for each result that is not
// a pass. Suites are spooled to temporary files as objects stream in, so
// memory does not grow with the number of objects; Close writes the
// document.
type JUnitWriter struct {
	policies map[string]*Policy
	// body holds the finished suites, suite the current one's testcases.
	body, suite *spool
	resource    string
	suiteCount  junitCounts
	total       junitCounts
}

// junitCounts are the counts JUnit's attributes carry.
type junitCounts struct{ tests, failures, errors, skipped int }

func (c *junitCounts) add(s Status) {
	c.tests++
	switch s {
	case Fail:
		c.failures++
	case Error:
		c.errors++
	case Skip:
		c.skipped++
	}
}

func (c junitCounts) attrs() string {
	return fmt.Sprintf(`tests="%d" failures="%d" errors="%d" skipped="%d"`, c.tests, c.failures, c.errors, c.skipped)
}

// NewJUnitWriter returns a JUnitWriter for policies, spooling in dir ("":
// the system's temporary directory).
func NewJUnitWriter(policies []*Policy, dir string) (*JUnitWriter, error) {
	j := &JUnitWriter{policies: map[string]*Policy{}}
	for _, p := range policies {
		j.policies[p.IR.Name] = p
	}
	var err error
	if j.body, err = newSpool(dir); err != nil {
		return nil, err
	}
	if j.suite, err = newSpool(dir); err != nil {
		j.body.remove()
		return nil, err
	}
	return j, nil
}

// Object implements Sink.
func (j *JUnitWriter) Object(o *ObjectResult) error {
	resource := o.Resource.GroupResource().String()
	if resource != j.resource {
		if err := j.endSuite(); err != nil {
			return err
		}
		j.resource = resource
	}
	for _, r := range o.Results {
		j.suiteCount.add(r.Status)
		j.total.add(r.Status)
		if err := j.testcase(o, r); err != nil {
			return err
		}
	}
	return nil
}

// testcase writes one result.
func (j *JUnitWriter) testcase(o *ObjectResult, r PolicyResult) error {
	class := r.Policy
	if p := j.policies[r.Policy]; p != nil {
		class = p.Title()
	}
	class += bindingSuffix(r)
	w := j.suite.w
	fmt.Fprintf(w, `    <testcase classname="%s" name="%s">`, escape(class), escape(o.Ref()))
	switch r.Status {
	case Fail:
		fmt.Fprintf(w, `<failure type="fail" message="%s">%s</failure>`, escape(oneLine(r.Message)), escape(r.Message+actionsSuffix(r)))
	case Error:
		fmt.Fprintf(w, `<error type="error" message="%s">%s</error>`, escape(oneLine(r.Message)), escape(r.Message+actionsSuffix(r)))
	case Skip:
		fmt.Fprintf(w, `<skipped message="%s"></skipped>`, escape(oneLine(r.Message)))
	}
	_, err := io.WriteString(w, "</testcase>\n")
	return err
}

// endSuite moves the current suite, with its counts, into the body.
func (j *JUnitWriter) endSuite() error {
	if j.resource == "" {
		return nil
	}
	fmt.Fprintf(j.body.w, "  <testsuite name=\"%s\" %s>\n", escape(j.resource), j.suiteCount.attrs())
	if err := j.suite.copyTo(j.body.w); err != nil {
		return err
	}
	_, err := io.WriteString(j.body.w, "  </testsuite>\n")
	j.suiteCount = junitCounts{}
	return err
}

// Close writes the document to w and removes the spool files.
func (j *JUnitWriter) Close(w io.Writer, cov *Coverage) error {
	defer j.body.remove()
	defer j.suite.remove()
	if err := j.endSuite(); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s<testsuites name=\"admitc audit\" %s time=\"%.3f\">\n", xml.Header, j.total.attrs(), cov.Elapsed.Seconds())
	if err := j.body.copyTo(bw); err != nil {
		return err
	}
	io.WriteString(bw, "</testsuites>\n")
	return bw.Flush()
}

// Abort removes the spool files without writing anything.
func (j *JUnitWriter) Abort() {
	j.body.remove()
	j.suite.remove()
}

func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// spool is a temporary file written through a buffer.
type spool struct {
	f *os.File
	w *bufio.Writer
}

func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, ".admitc-audit-*.xml")
	if err != nil {
		return nil, err
	}
	return &spool{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// copyTo writes what was spooled to w and empties the spool.
func (s *spool) copyTo(w io.Writer) error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.Copy(w, s.f); err != nil {
		return err
	}
	if err := s.f.Truncate(0); err != nil {
		return err
	}
	_, err := s.f.Seek(0, io.SeekStart)
	return err
}

func (s *spool) remove() {
	s.f.Close()
	os.Remove(s.f.Name())
}
