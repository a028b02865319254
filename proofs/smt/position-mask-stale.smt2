; verispec certificate: position-mask-stale
; obligation: position-mask-stale-tail: A position-anchored mask over a cache still holding t >= 1 cells of the previous round's rejected drafts (positions L-1 .. L-2+t): no query may see them.
; convention: position-anchored, stale tail kept (ggml-org/llama.cpp position-anchored masks without llama_memory_seq_rm; docs/explanation/index-conventions.md#crops)
; this query asserts the preconditions and the negated property: sat means a counterexample exists
; written by z3 5.4.1
(set-info :status sat)
(declare-fun L () Int)
(declare-fun gamma () Int)
(declare-fun row () Int)
(declare-fun stale_count () Int)
(declare-fun key_position () Int)
(define-fun t1 () Int (- L 1))
(assert (>= L 1))
(assert (>= gamma 0))
(assert (>= row 0))
(assert (<= row gamma))
(assert (>= stale_count 1))
(assert (>= key_position t1))
(assert (<= key_position (+ (- L 2) stale_count)))
(assert (not (not (<= key_position (+ t1 row)))))
(check-sat)
