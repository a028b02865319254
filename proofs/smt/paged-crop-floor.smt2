; verispec certificate: paged-crop-floor
; obligation: paged-crop: After cropping to n entries, the pages kept hold every kept position, and every page kept holds a kept position (symbolic page size).
; convention: pages kept = n // B (pages are allocated by ceiling division (vllm-project/vllm KV cache manager); docs/explanation/index-conventions.md#paged-caches)
; this query asserts the preconditions and the negated property: sat means a counterexample exists
; written by z3 5.4.1
(set-info :status sat)
(declare-fun page_size () Int)
(declare-fun kept () Int)
(declare-fun pos () Int)
(define-fun t1 () Int (div pos page_size))
(define-fun t2 () Bool (< t1 (div kept page_size)))
(assert (>= page_size 1))
(assert (>= kept 0))
(assert (>= pos 0))
(assert (not (and (=> (< pos kept) t2) (=> t2 (< (* t1 page_size) kept)))))
(check-sat)
