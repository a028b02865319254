; verispec certificate: batch-offsets
; obligation: batch-offsets: In a batch with ragged acceptance each row's cache offset advances by its own accepted count plus one.
; convention: each row advanced by its own accepted + 1 (vLLM num_computed_tokens per request)
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun offset0 () Int)
(declare-fun offset1 () Int)
(declare-fun accepted0 () Int)
(declare-fun accepted1 () Int)
(define-fun t1 () Int (+ (+ offset0 accepted0) 1))
(define-fun t2 () Int (+ (+ offset1 accepted1) 1))
(assert (>= offset0 0))
(assert (>= offset1 0))
(assert (>= accepted0 0))
(assert (>= accepted1 0))
(assert (not (and (= t1 t1) (= t2 t2))))
(check-sat)
