package admission

// RedactPatterns runs the patterns without the pre-test, so tests can check
// the pre-test never skips a string a pattern would change.
var RedactPatterns = redactPatterns

// CompileTraceWithin is Compile with the trace bounded by maxBytes rather
// than MaxTraceBytes (32 MiB, too large for a table test to reach).
var CompileTraceWithin = compileWhole

// CompileLazy is Scope.Compile with the trace bounded by maxBytes.
func CompileLazy(sc *Scope, req *Request, rank Ranking, texts Texts, maxBytes int) (*Result, error) {
	return sc.compile(req, rank, texts, maxBytes)
}
