/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * compat/libmnl/libmnl.h - the part of libmnl 1.0.4 that src/proto/proto.c
 * uses, for tdb.ko, where there is no libmnl.  Only these functions exist
 * (`grep -o 'mnl_[a-z_0-9]*' src/proto/proto.c | sort -u`); a new use in
 * proto.c fails to compile until it is added here.
 *
 * Each function does exactly what libmnl 1.0.4's does (src/attr.c,
 * src/nlmsg.c), byte for byte, so the codec behaves the same in tdbd and
 * in tdb.ko; in particular:
 *  - mnl_attr_put*() leave the padding after a payload as it was (1.0.4
 *    does not zero it; proto.c's put_bytes() zeroes it itself);
 *  - mnl_attr_parse*() stop quietly at the first attribute that does not
 *    fit, and return the callback's value as soon as it is
 *    <= MNL_CB_STOP, else MNL_CB_OK;
 *  - the *_check() builders refuse (false / NULL) when the attribute
 *    would pass buflen, having written nothing.
 *
 * errno: where libmnl sets errno (validation failures) the shim only
 * returns -1; the errno libmnl would set is named in a comment at each
 * place.  The kernel has no errno (see compat/errno.h): proto.c reads
 * only the return values, which are the same.
 */
#ifndef TDBK_COMPAT_LIBMNL_H
#define TDBK_COMPAT_LIBMNL_H

#include <linux/types.h>
#include <linux/string.h>
#include <linux/netlink.h>
#include <linux/genetlink.h>

/*
 * proto.c defines its own BIT() after its includes; the kernel's
 * <linux/bits.h> (pulled in above) has one too, and a redefinition is a
 * compile error under -Werror.  Every kernel header proto.c needs is
 * included by now (later #includes of them are no-ops), so drop the
 * kernel's BIT here, for proto.c only: nothing else includes this file.
 */
#undef BIT

#define MNL_ALIGNTO		4
#define MNL_ALIGN(len)		(((len) + MNL_ALIGNTO - 1) & ~(MNL_ALIGNTO - 1))
#define MNL_NLMSG_HDRLEN	MNL_ALIGN(sizeof(struct nlmsghdr))
#define MNL_ATTR_HDRLEN		MNL_ALIGN(sizeof(struct nlattr))

enum mnl_attr_data_type {
	MNL_TYPE_UNSPEC,
	MNL_TYPE_U8,
	MNL_TYPE_U16,
	MNL_TYPE_U32,
	MNL_TYPE_U64,
	MNL_TYPE_STRING,
	MNL_TYPE_FLAG,
	MNL_TYPE_MSECS,
	MNL_TYPE_NESTED,
	MNL_TYPE_NESTED_COMPAT,
	MNL_TYPE_NUL_STRING,
	MNL_TYPE_BINARY,
	MNL_TYPE_MAX,
};

#define MNL_CB_ERROR		-1
#define MNL_CB_STOP		 0
#define MNL_CB_OK		 1

typedef int (*mnl_attr_cb_t)(const struct nlattr *attr, void *data);

/* --- messages (nlmsg.c) ---------------------------------------------- */

static inline struct nlmsghdr *mnl_nlmsg_put_header(void *buf)
{
	int len = MNL_ALIGN(sizeof(struct nlmsghdr));
	struct nlmsghdr *nlh = buf;

	memset(buf, 0, len);
	nlh->nlmsg_len = len;
	return nlh;
}

static inline void *mnl_nlmsg_put_extra_header(struct nlmsghdr *nlh,
					       size_t size)
{
	char *ptr = (char *)nlh + nlh->nlmsg_len;
	size_t len = MNL_ALIGN(size);

	nlh->nlmsg_len += len;
	memset(ptr, 0, len);
	return ptr;
}

static inline void *mnl_nlmsg_get_payload(const struct nlmsghdr *nlh)
{
	return (void *)nlh + MNL_NLMSG_HDRLEN;
}

static inline void *mnl_nlmsg_get_payload_offset(const struct nlmsghdr *nlh,
						 size_t offset)
{
	return (void *)nlh + MNL_NLMSG_HDRLEN + MNL_ALIGN(offset);
}

static inline void *mnl_nlmsg_get_payload_tail(const struct nlmsghdr *nlh)
{
	return (void *)nlh + MNL_ALIGN(nlh->nlmsg_len);
}

/* --- attributes (attr.c) --------------------------------------------- */

static inline uint16_t mnl_attr_get_type(const struct nlattr *attr)
{
	return attr->nla_type & NLA_TYPE_MASK;
}

static inline uint16_t mnl_attr_get_payload_len(const struct nlattr *attr)
{
	return attr->nla_len - MNL_ATTR_HDRLEN;
}

static inline void *mnl_attr_get_payload(const struct nlattr *attr)
{
	return (void *)attr + MNL_ATTR_HDRLEN;
}

/* len may be negative while walking a malformed message: signed on
 * purpose, as in libmnl. */
static inline bool mnl_attr_ok(const struct nlattr *attr, int len)
{
	return len >= (int)sizeof(struct nlattr) &&
	       attr->nla_len >= sizeof(struct nlattr) &&
	       (int)attr->nla_len <= len;
}

static inline struct nlattr *mnl_attr_next(const struct nlattr *attr)
{
	return (struct nlattr *)((void *)attr + MNL_ALIGN(attr->nla_len));
}

static inline uint32_t mnl_attr_get_u32(const struct nlattr *attr)
{
	return *((uint32_t *)mnl_attr_get_payload(attr));
}

/* Align-safe, as in libmnl: a u64 payload is only 4-byte aligned. */
static inline uint64_t mnl_attr_get_u64(const struct nlattr *attr)
{
	uint64_t tmp;

	memcpy(&tmp, mnl_attr_get_payload(attr), sizeof(tmp));
	return tmp;
}

static inline const char *mnl_attr_get_str(const struct nlattr *attr)
{
	return mnl_attr_get_payload(attr);
}

static inline int __mnl_attr_validate(const struct nlattr *attr,
				      enum mnl_attr_data_type type,
				      size_t exp_len)
{
	uint16_t attr_len = mnl_attr_get_payload_len(attr);
	const char *attr_data = mnl_attr_get_payload(attr);

	if (attr_len < exp_len)
		return -1;			/* libmnl: errno = ERANGE */
	switch (type) {
	case MNL_TYPE_FLAG:
		if (attr_len > 0)
			return -1;		/* ERANGE */
		break;
	case MNL_TYPE_NUL_STRING:
		if (attr_len == 0)
			return -1;		/* ERANGE */
		if (attr_data[attr_len - 1] != '\0')
			return -1;		/* EINVAL */
		break;
	case MNL_TYPE_STRING:
		if (attr_len == 0)
			return -1;		/* ERANGE */
		break;
	case MNL_TYPE_NESTED:
		/* empty nested attributes are OK. */
		if (attr_len == 0)
			break;
		/* if not empty, they must contain one header, eg. flag */
		if (attr_len < MNL_ATTR_HDRLEN)
			return -1;		/* ERANGE */
		break;
	default:
		break;
	}
	if (exp_len && attr_len > exp_len)
		return -1;			/* ERANGE */
	return 0;
}

static inline int mnl_attr_validate(const struct nlattr *attr,
				    enum mnl_attr_data_type type)
{
	static const size_t data_type_len[MNL_TYPE_MAX] = {
		[MNL_TYPE_U8]		= sizeof(uint8_t),
		[MNL_TYPE_U16]		= sizeof(uint16_t),
		[MNL_TYPE_U32]		= sizeof(uint32_t),
		[MNL_TYPE_U64]		= sizeof(uint64_t),
		[MNL_TYPE_MSECS]	= sizeof(uint64_t),
	};

	if (type >= MNL_TYPE_MAX)
		return -1;			/* EINVAL */
	return __mnl_attr_validate(attr, type, data_type_len[type]);
}

static inline int mnl_attr_validate2(const struct nlattr *attr,
				     enum mnl_attr_data_type type,
				     size_t exp_len)
{
	if (type >= MNL_TYPE_MAX)
		return -1;			/* EINVAL */
	return __mnl_attr_validate(attr, type, exp_len);
}

static inline int mnl_attr_parse(const struct nlmsghdr *nlh,
				 unsigned int offset, mnl_attr_cb_t cb,
				 void *data)
{
	const struct nlattr *attr;
	int ret = MNL_CB_OK;

	for (attr = mnl_nlmsg_get_payload_offset(nlh, offset);
	     mnl_attr_ok(attr, (char *)mnl_nlmsg_get_payload_tail(nlh) -
			       (char *)attr);
	     attr = mnl_attr_next(attr)) {
		ret = cb(attr, data);
		if (ret <= MNL_CB_STOP)
			return ret;
	}
	return ret;
}

static inline int mnl_attr_parse_nested(const struct nlattr *nested,
					mnl_attr_cb_t cb, void *data)
{
	const struct nlattr *attr;
	int ret = MNL_CB_OK;

	for (attr = mnl_attr_get_payload(nested);
	     mnl_attr_ok(attr, (char *)mnl_attr_get_payload(nested) +
			       mnl_attr_get_payload_len(nested) -
			       (char *)attr);
	     attr = mnl_attr_next(attr)) {
		ret = cb(attr, data);
		if (ret <= MNL_CB_STOP)
			return ret;
	}
	return ret;
}

static inline void mnl_attr_put(struct nlmsghdr *nlh, uint16_t type,
				size_t len, const void *data)
{
	struct nlattr *attr = mnl_nlmsg_get_payload_tail(nlh);
	uint16_t payload_len = MNL_ALIGN(sizeof(struct nlattr)) + len;

	attr->nla_type = type;
	attr->nla_len = payload_len;
	memcpy(mnl_attr_get_payload(attr), data, len);
	nlh->nlmsg_len += MNL_ALIGN(payload_len);
}

static inline bool mnl_attr_put_check(struct nlmsghdr *nlh, size_t buflen,
				      uint16_t type, size_t len,
				      const void *data)
{
	if (nlh->nlmsg_len + MNL_ATTR_HDRLEN + MNL_ALIGN(len) > buflen)
		return false;
	mnl_attr_put(nlh, type, len, data);
	return true;
}

static inline bool mnl_attr_put_u32_check(struct nlmsghdr *nlh,
					  size_t buflen, uint16_t type,
					  uint32_t data)
{
	return mnl_attr_put_check(nlh, buflen, type, sizeof(uint32_t), &data);
}

static inline bool mnl_attr_put_u64_check(struct nlmsghdr *nlh,
					  size_t buflen, uint16_t type,
					  uint64_t data)
{
	return mnl_attr_put_check(nlh, buflen, type, sizeof(uint64_t), &data);
}

static inline struct nlattr *mnl_attr_nest_start(struct nlmsghdr *nlh,
						 uint16_t type)
{
	struct nlattr *start = mnl_nlmsg_get_payload_tail(nlh);

	/* set start->nla_len in mnl_attr_nest_end() */
	start->nla_type = NLA_F_NESTED | type;
	nlh->nlmsg_len += MNL_ALIGN(sizeof(struct nlattr));
	return start;
}

static inline struct nlattr *mnl_attr_nest_start_check(struct nlmsghdr *nlh,
						       size_t buflen,
						       uint16_t type)
{
	if (nlh->nlmsg_len + MNL_ATTR_HDRLEN > buflen)
		return NULL;
	return mnl_attr_nest_start(nlh, type);
}

static inline void mnl_attr_nest_end(struct nlmsghdr *nlh,
				     struct nlattr *start)
{
	start->nla_len = mnl_nlmsg_get_payload_tail(nlh) - (void *)start;
}

#endif
