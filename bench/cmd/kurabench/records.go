package main

import (
	"strconv"
)

// Every record the bench writes, raw or through kurad, has this shape: an
// agent.thought by agent:bench whose content is a JSON object of about 100
// bytes, unique per run, stream and index (kurad deduplicates identical
// records, so a repeated content would measure the dedup path instead).
const (
	recordType   = "agent.thought"
	recordAuthor = "agent:bench"
	filler       = "weighing the next step of the plan against the ledger so far"
)

// content returns the JSON content of record i of a stream, already in
// canonical (RFC 8785) form: one key, ASCII text.
func (b *bench) content(stream string, i int) []byte {
	buf := make([]byte, 0, 128)
	buf = append(buf, `{"text":"bench `...)
	buf = append(buf, b.nonce...)
	buf = append(buf, ' ')
	buf = append(buf, stream...)
	buf = append(buf, ' ')
	buf = strconv.AppendInt(buf, int64(i), 10)
	buf = append(buf, ' ')
	buf = append(buf, filler...)
	buf = append(buf, `"}`...)
	return buf
}

// appendRecordInput appends the API record input for record i of a stream.
func (b *bench) appendRecordInput(buf []byte, stream string, i int) []byte {
	buf = append(buf, `{"type":"`+recordType+`","content":`...)
	buf = append(buf, b.content(stream, i)...)
	buf = append(buf, `,"author_id":"`+recordAuthor+`"}`...)
	return buf
}

// batchBody returns a POST /v1/records/batch body with records first..first+n-1.
func (b *bench) batchBody(stream string, first, n int) []byte {
	buf := make([]byte, 0, n*180+16)
	buf = append(buf, `{"records":[`...)
	for i := range n {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = b.appendRecordInput(buf, stream, first+i)
	}
	buf = append(buf, `]}`...)
	return buf
}
