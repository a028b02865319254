; verispec certificate: truncation-budget-first
; obligation: truncation: A committed block is cut after its first EOS and at the remaining token budget, and nothing allowed is dropped.
; convention: length checked before stop tokens (sgl-project/sglang #31599)
; this query asserts the preconditions and the negated property: sat means a counterexample exists
; written by z3 5.4.1
(set-info :status sat)
(declare-fun block_len () Int)
(declare-fun eos_index () Int)
(declare-fun budget () Int)
(define-fun t1 () Int (+ eos_index 1))
(define-fun t2 () Int (ite (<= block_len t1) block_len t1))
(assert (>= block_len 1))
(assert (>= eos_index 0))
(assert (<= eos_index block_len))
(assert (>= budget 1))
(assert (not (= (ite (>= block_len budget) budget t2) (ite (<= t2 budget) t2 budget))))
(check-sat)
