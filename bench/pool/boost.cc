// SPDX-License-Identifier: GPL-2.0-only
/*
 * boost.cc - the boost::object_pool peer of tdb-bench-pool (see main.c).
 *
 * object_pool<T> serves one type, so it runs the single-type cases and
 * create & destroy (one object_pool<Big> or object_pool<Small> per short
 * pool, as in the seed); the Mix needs several sizes and is n/a.  free()
 * is object_pool::free, i.e. ordered_free, as in the seed.  The pool of
 * the single-type cases is destroyed after the timer, like the seed's,
 * which lived outside the timed lambda.
 */
#include <boost/pool/object_pool.hpp>
#include <boost/version.hpp>

#include "loops.h"

#define P_SETUP(T)              boost::object_pool<T> pool
#define P_TEARDOWN()            ((void)0)   /* ~object_pool after return */
#define P_ALLOC(T)              pool.malloc()
#define P_FREE(o, T)            pool.free(o)
#define P_KEEP(i, o)            ((void)0)
#define P_DROP(i)               ((void)0)
#define P_RELEASE_ALL(n, T)     ((void)0)

#define P_CD_SETUP()            ((void)0)
#define P_CD_TEARDOWN()         ((void)0)
/* Destroyed at the end of the branch's block, inside the timer. */
#define P_CD_BEGIN(T)           boost::object_pool<T> cd
#define P_CD_ALLOC(T)           cd.malloc()
#define P_CD_KEEP(j, o)         ((void)0)
#define P_CD_END(T)             ((void)0)

extern "C" {

BP_DEFINE_SINGLE(boost_small, Small, 0)
BP_DEFINE_SINGLE(boost_small_free, Small, 1)
BP_DEFINE_SINGLE(boost_big, Big, 0)
BP_DEFINE_SINGLE(boost_big_free, Big, 1)
BP_DEFINE_CD(boost_cd)

const char *
boost_version(void)
{
	return BOOST_LIB_VERSION;
}

}
