; verispec certificate: position-mask
; obligation: position-mask: A position-anchored mask over a cache with no stale tail: a key is visible exactly when its position is at most the query's.
; convention: position-anchored, cache without stale tail (HF masking_utils, llama.cpp, gpt-fast)
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun L () Int)
(declare-fun gamma () Int)
(declare-fun row () Int)
(declare-fun stale_count () Int)
(declare-fun key_position () Int)
(define-fun t1 () Int (- L 1))
(define-fun t2 () Bool (<= key_position (+ t1 row)))
(assert (>= L 1))
(assert (>= gamma 0))
(assert (>= row 0))
(assert (<= row gamma))
(assert (= stale_count 0))
(assert (>= key_position 0))
(assert (<= key_position (+ t1 gamma)))
(assert (not (= t2 t2)))
(check-sat)
