--
-- PostgreSQL database dump
--

\restrict OrL4XfWHAF0cqCPb4kMbg0lyx1ZyKHmrzwRe22TSORci0JCNBtUwcYu13c8BOdF

-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: legacyfx_branches; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.legacyfx_branches (
    tenant_id text NOT NULL,
    thread_id text NOT NULL,
    name text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    from_branch text,
    from_entry text,
    last_position bigint DEFAULT 0 NOT NULL,
    entry_count bigint DEFAULT 0 NOT NULL
)
WITH (fillfactor='70');


--
-- Name: legacyfx_entries; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.legacyfx_entries (
    tenant_id text NOT NULL,
    thread_id text NOT NULL,
    branch text NOT NULL,
    "position" bigint NOT NULL,
    id text NOT NULL,
    role text NOT NULL,
    content text,
    name text,
    tool_calls jsonb,
    tool_call_id text,
    metadata json DEFAULT '{}'::json NOT NULL,
    state json DEFAULT '{}'::json NOT NULL,
    token_count integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    idempotency_key text,
    search tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(content, ''::text))) STORED,
    fingerprint text
);


--
-- Name: legacyfx_records; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.legacyfx_records (
    tenant_id text NOT NULL,
    kind text NOT NULL,
    id text NOT NULL,
    agent_id text,
    user_id text,
    key text,
    content text NOT NULL,
    data json DEFAULT '{}'::json NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone,
    search tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED,
    revision bigint DEFAULT 0 NOT NULL
);


--
-- Name: legacyfx_schema_version; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.legacyfx_schema_version (
    id integer NOT NULL,
    version integer NOT NULL,
    CONSTRAINT legacyfx_schema_version_id_check CHECK ((id = 1))
);


--
-- Name: legacyfx_snapshots; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.legacyfx_snapshots (
    tenant_id text NOT NULL,
    run_id text NOT NULL,
    user_id text,
    value text NOT NULL,
    saved_at timestamp with time zone NOT NULL
);


--
-- Name: legacyfx_summaries; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.legacyfx_summaries (
    tenant_id text NOT NULL,
    id text NOT NULL,
    agent_id text NOT NULL,
    user_id text,
    content text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    seq bigint NOT NULL
);


--
-- Name: legacyfx_summaries_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.legacyfx_summaries ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.legacyfx_summaries_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: legacyfx_threads; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.legacyfx_threads (
    tenant_id text NOT NULL,
    id text NOT NULL,
    user_id text,
    agent_id text,
    title text,
    metadata json DEFAULT '{}'::json NOT NULL,
    status text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    current_branch text NOT NULL
)
WITH (fillfactor='70');


--
-- Name: legacyfx_vector_stamps; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.legacyfx_vector_stamps (
    tenant_id text NOT NULL,
    model_id text NOT NULL,
    kind text NOT NULL,
    version bigint DEFAULT 0 NOT NULL,
    generation bigint DEFAULT 0 NOT NULL
);


--
-- Name: legacyfx_vectors; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.legacyfx_vectors (
    tenant_id text NOT NULL,
    kind text NOT NULL,
    id text NOT NULL,
    model_id text NOT NULL,
    thread_id text,
    dim integer NOT NULL,
    embedding bytea NOT NULL,
    seq bigint DEFAULT 0 NOT NULL
);


--
-- Name: legacyfx_working; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.legacyfx_working (
    tenant_id text NOT NULL,
    run_id text NOT NULL,
    key text NOT NULL,
    value text NOT NULL
);


--
-- Data for Name: legacyfx_branches; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.legacyfx_branches VALUES ('legacy', '01M94YFJ95ZKKJCCMSWY86Z6XY', 'main', '2026-11-01 00:00:00+00', NULL, NULL, 6, 6);
INSERT INTO public.legacyfx_branches VALUES ('legacy', '01M94YFJ95ZKKJCCMSWY86Z6XY', 'alt', '2026-11-01 00:00:00.006+00', 'main', '01M94YFJZ65MHX8P56B4BT576F', 3, 3);
INSERT INTO public.legacyfx_branches VALUES ('legacy', '01M94YFK1PJFKBGAB76D2593AC', 'main', '2026-11-01 00:00:00.008+00', NULL, NULL, 1, 1);
INSERT INTO public.legacyfx_branches VALUES ('legacy', '01M94YFK2A0D0PKEZV0G9TETX0', 'main', '2026-11-01 00:00:00.01+00', NULL, NULL, 1, 1);


--
-- Data for Name: legacyfx_entries; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.legacyfx_entries VALUES ('legacy', '01M94YFJ95ZKKJCCMSWY86Z6XY', 'main', 1, '01M94YFJYDP1QFH7HDFPW0C4CC', 'user', 'I am flying to Lisbon in May, a window seat please', NULL, NULL, NULL, '{}', '{}', 16, '2026-11-01 00:00:00.001+00', NULL, DEFAULT, NULL);
INSERT INTO public.legacyfx_entries VALUES ('legacy', '01M94YFJ95ZKKJCCMSWY86Z6XY', 'main', 2, '01M94YFJZ65MHX8P56B4BT576F', 'assistant', 'Noted: Lisbon in May, window seat. Anything else?', NULL, NULL, NULL, '{}', '{}', 17, '2026-11-01 00:00:00.002+00', NULL, DEFAULT, NULL);
INSERT INTO public.legacyfx_entries VALUES ('legacy', '01M94YFJ95ZKKJCCMSWY86Z6XY', 'main', 3, '01M94YFJZDGFFRX2KN14JW8HDB', 'assistant', NULL, NULL, '[["call_1", "book", "{\"city\": \"Lisbon\"}"]]', NULL, '{}', '{}', 18, '2026-11-01 00:00:00.003+00', NULL, DEFAULT, NULL);
INSERT INTO public.legacyfx_entries VALUES ('legacy', '01M94YFJ95ZKKJCCMSWY86Z6XY', 'main', 4, '01M94YFJZHCC88JMEAH5ESFXDK', 'tool', 'booked: LX42', NULL, NULL, 'call_1', '{}', '{}', 9, '2026-11-01 00:00:00.004+00', NULL, DEFAULT, NULL);
INSERT INTO public.legacyfx_entries VALUES ('legacy', '01M94YFJ95ZKKJCCMSWY86Z6XY', 'main', 5, '01M94YFK008P59JGY5D42DV65N', 'user', 'Thanks ü 日本 😀', NULL, NULL, NULL, '{}', '{}', 8, '2026-11-01 00:00:00.005+00', 'batch-1', DEFAULT, '133e4fa652dce3b7cfe035ebfeea19914efa864bd6b048e8d370947bde919780');
INSERT INTO public.legacyfx_entries VALUES ('legacy', '01M94YFJ95ZKKJCCMSWY86Z6XY', 'main', 6, '01M94YFK008P59JGY5D42DV65P', 'assistant', '-0.0', NULL, NULL, NULL, '{}', '{}', 8, '2026-11-01 00:00:00.005+00', 'batch-11', DEFAULT, '133e4fa652dce3b7cfe035ebfeea19914efa864bd6b048e8d370947bde919780');
INSERT INTO public.legacyfx_entries VALUES ('legacy', '01M94YFJ95ZKKJCCMSWY86Z6XY', 'alt', 1, '01M94YFJYDP1QFH7HDFPW0C4CC', 'user', 'I am flying to Lisbon in May, a window seat please', NULL, NULL, NULL, '{}', '{}', 16, '2026-11-01 00:00:00.001+00', NULL, DEFAULT, NULL);
INSERT INTO public.legacyfx_entries VALUES ('legacy', '01M94YFJ95ZKKJCCMSWY86Z6XY', 'alt', 2, '01M94YFJZ65MHX8P56B4BT576F', 'assistant', 'Noted: Lisbon in May, window seat. Anything else?', NULL, NULL, NULL, '{}', '{}', 17, '2026-11-01 00:00:00.002+00', NULL, DEFAULT, NULL);
INSERT INTO public.legacyfx_entries VALUES ('legacy', '01M94YFJ95ZKKJCCMSWY86Z6XY', 'alt', 3, '01M94YFK0VXCVQAJZYGA6SKW5A', 'user', 'Make it Porto', NULL, NULL, NULL, '{}', '{}', 7, '2026-11-01 00:00:00.007+00', NULL, DEFAULT, NULL);
INSERT INTO public.legacyfx_entries VALUES ('legacy', '01M94YFK1PJFKBGAB76D2593AC', 'main', 1, '01M94YFK227847Y2PYPSJ8YRRC', 'user', 'My car is blue and I drink chai', NULL, NULL, NULL, '{}', '{}', 12, '2026-11-01 00:00:00.009+00', NULL, DEFAULT, NULL);
INSERT INTO public.legacyfx_entries VALUES ('legacy', '01M94YFK2A0D0PKEZV0G9TETX0', 'main', 1, '01M94YFK2PSQ9ZER35PCE8VHBE', 'system', 'Shared notes, no user', NULL, NULL, NULL, '{}', '{}', 9, '2026-11-01 00:00:00.011+00', NULL, DEFAULT, NULL);


--
-- Data for Name: legacyfx_records; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.legacyfx_records VALUES ('legacy', 'fact', '01M94YFK35ERHMPSPSFJA3YW8N', NULL, 'ann', NULL, 'Ann prefers aisle seats', '{"category":"pref","confidence":null,"source":null,"metadata":{},"source_entries":[],"version":1}', '2026-11-01 00:00:00.012+00', '2026-11-01 00:00:00.013+00', NULL, DEFAULT, 1);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'fact', '01M94YFK3XGQSAWPGS0T1QB5K9', NULL, 'bob', NULL, 'Bob drives a blue car', '{"category":null,"confidence":0.75,"source":"chat","metadata":{},"source_entries":[],"version":1}', '2026-11-01 00:00:00.014+00', '2026-11-01 00:00:00.014+00', NULL, DEFAULT, 0);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'fact', '01M94YFK43QS1A52XPFX06XD3X', 'helper', NULL, NULL, 'The office opens at 9', '{"category":null,"confidence":null,"source":null,"metadata":{},"source_entries":[],"version":1}', '2026-11-01 00:00:00.015+00', '2026-11-01 00:00:00.015+00', NULL, DEFAULT, 0);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'document', '01M94YFK4G3V705MW5CJWSCKTG', NULL, NULL, NULL, 'Lisbon travel guide: trams and pastries', '{"metadata":{"lang":"en"}}', '2026-11-01 00:00:00.016+00', '2026-11-01 00:00:00.016+00', NULL, DEFAULT, 0);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'document', '01M94YFK4VJ2KV6E820NR6HK7S', NULL, 'ann', NULL, 'Ann''s passport expires 2030', '{"metadata":{}}', '2026-11-01 00:00:00.017+00', '2026-11-01 00:00:00.017+00', NULL, DEFAULT, 0);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'core_fact_history', '01M94YFK545CHHJR56BEF7RPCM', NULL, 'ann', '["ann", "name"]', 'Ann', '{"key":"name"}', '2026-11-01 00:00:00.018+00', '2026-11-01 00:00:00.018+00', NULL, DEFAULT, 0);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'core_fact', '["ann", "name"]', NULL, 'ann', 'name', 'Ann Lee', '{}', '2026-11-01 00:00:00.018+00', '2026-11-01 00:00:00.019+00', NULL, DEFAULT, 2);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'core_fact_history', '01M94YFK5CYRCWWA7VXJWRGAM0', NULL, 'ann', '["ann", "name"]', 'Ann Lee', '{"key":"name"}', '2026-11-01 00:00:00.019+00', '2026-11-01 00:00:00.019+00', NULL, DEFAULT, 0);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'graph_entity', '01M94YFK5Y376KYJ61FGTCV1ZT', NULL, 'ann', NULL, 'Lisbon
Lisboa', '{"name":"Lisbon","type":"city","aliases":["Lisboa"],"observations":[],"properties":{},"confidence":1.0,"source":"user","obs_provenance":{}}', '2026-11-01 00:00:00.02+00', '2026-11-01 00:00:00.02+00', NULL, DEFAULT, 0);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'graph_ident', '["ident",null,"ann","city","lisbon"]', NULL, 'ann', NULL, '', '{"entity_id":"01M94YFK5Y376KYJ61FGTCV1ZT"}', '2026-11-01 00:00:00.02+00', '2026-11-01 00:00:00.02+00', NULL, DEFAULT, 0);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'graph_name', '["name","01M94YFK5Y376KYJ61FGTCV1ZT","lisbon"]', NULL, 'ann', 'lisbon', '', '{"entity_id":"01M94YFK5Y376KYJ61FGTCV1ZT"}', '2026-11-01 00:00:00.02+00', '2026-11-01 00:00:00.02+00', NULL, DEFAULT, 0);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'graph_name', '["name","01M94YFK5Y376KYJ61FGTCV1ZT","lisboa"]', NULL, 'ann', 'lisboa', '', '{"entity_id":"01M94YFK5Y376KYJ61FGTCV1ZT"}', '2026-11-01 00:00:00.02+00', '2026-11-01 00:00:00.02+00', NULL, DEFAULT, 0);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'graph_entity', '01M94YFK68Z2GQ86MNS7XJMT6T', NULL, 'ann', NULL, 'Ann
likes trams', '{"name":"Ann","type":"person","aliases":[],"observations":["likes trams"],"properties":{},"confidence":1.0,"source":"user","obs_provenance":{}}', '2026-11-01 00:00:00.021+00', '2026-11-01 00:00:00.021+00', NULL, DEFAULT, 0);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'graph_ident', '["ident",null,"ann","person","ann"]', NULL, 'ann', NULL, '', '{"entity_id":"01M94YFK68Z2GQ86MNS7XJMT6T"}', '2026-11-01 00:00:00.021+00', '2026-11-01 00:00:00.021+00', NULL, DEFAULT, 0);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'graph_name', '["name","01M94YFK68Z2GQ86MNS7XJMT6T","ann"]', NULL, 'ann', 'ann', '', '{"entity_id":"01M94YFK68Z2GQ86MNS7XJMT6T"}', '2026-11-01 00:00:00.021+00', '2026-11-01 00:00:00.021+00', NULL, DEFAULT, 0);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'graph_out', '01M94YFK6XJKC4CKCK2WWR1PYJ', NULL, 'ann', '01M94YFK68Z2GQ86MNS7XJMT6T', '', '{"source_id":"01M94YFK68Z2GQ86MNS7XJMT6T","target_id":"01M94YFK5Y376KYJ61FGTCV1ZT","type":"plans_to_visit","label":null,"weight":1.0,"bidirectional":false,"properties":{},"confidence":1.0,"source":"user","provenance":[],"valid_at":null,"invalid_at":null,"expired_at":null,"support":[]}', '2026-11-01 00:00:00.022+00', '2026-11-01 00:00:00.023+00', NULL, DEFAULT, 0);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'graph_in', '01M94YFK6XJKC4CKCK2WWR1PYJ', NULL, 'ann', '01M94YFK5Y376KYJ61FGTCV1ZT', '', '{"source_id":"01M94YFK68Z2GQ86MNS7XJMT6T","target_id":"01M94YFK5Y376KYJ61FGTCV1ZT","type":"plans_to_visit","label":null,"weight":1.0,"bidirectional":false,"properties":{},"confidence":1.0,"source":"user","provenance":[],"valid_at":null,"invalid_at":null,"expired_at":null,"support":[]}', '2026-11-01 00:00:00.022+00', '2026-11-01 00:00:00.023+00', NULL, DEFAULT, 0);
INSERT INTO public.legacyfx_records VALUES ('legacy', 'graph_slot', '["slot",null,"ann","01M94YFK68Z2GQ86MNS7XJMT6T","plans_to_visit"]', NULL, 'ann', '01M94YFK68Z2GQ86MNS7XJMT6T', '', '{"source_id":"01M94YFK68Z2GQ86MNS7XJMT6T","type":"plans_to_visit"}', '2026-11-01 00:00:00.023+00', '2026-11-01 00:00:00.023+00', NULL, DEFAULT, 0);


--
-- Data for Name: legacyfx_schema_version; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.legacyfx_schema_version VALUES (1, 10);


--
-- Data for Name: legacyfx_snapshots; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.legacyfx_snapshots VALUES ('legacy', 'run-ann', 'ann', '{"step":3,"todo":["pack"]}', '2026-11-01 00:00:00.026+00');
INSERT INTO public.legacyfx_snapshots VALUES ('legacy', 'run-open', NULL, '{"step":1}', '2026-11-01 00:00:00.027+00');


--
-- Data for Name: legacyfx_summaries; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.legacyfx_summaries OVERRIDING SYSTEM VALUE VALUES ('legacy', '01M94YFK7CVC0SZ8Q9B40SC062', 'helper', 'ann', 'Ann is planning a trip', '2026-11-01 00:00:00.024+00', 1);
INSERT INTO public.legacyfx_summaries OVERRIDING SYSTEM VALUE VALUES ('legacy', '01M94YFK7E7HBWJ7T56YE2EMZS', 'helper', NULL, 'Shared summary', '2026-11-01 00:00:00.025+00', 2);


--
-- Data for Name: legacyfx_threads; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.legacyfx_threads VALUES ('legacy', '01M94YFJ95ZKKJCCMSWY86Z6XY', 'ann', 'helper', 'Trip', '{"k":[1]}', 'active', '2026-11-01 00:00:00+00', '2026-11-01 00:00:00.007+00', 'main');
INSERT INTO public.legacyfx_threads VALUES ('legacy', '01M94YFK1PJFKBGAB76D2593AC', 'bob', 'helper', NULL, '{}', 'active', '2026-11-01 00:00:00.008+00', '2026-11-01 00:00:00.009+00', 'main');
INSERT INTO public.legacyfx_threads VALUES ('legacy', '01M94YFK2A0D0PKEZV0G9TETX0', NULL, 'helper', NULL, '{}', 'active', '2026-11-01 00:00:00.01+00', '2026-11-01 00:00:00.011+00', 'main');


--
-- Data for Name: legacyfx_vector_stamps; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.legacyfx_vector_stamps VALUES ('legacy', 'test:synonyms@16', 'entry', 7, 0);
INSERT INTO public.legacyfx_vector_stamps VALUES ('legacy', 'test:synonyms@16', 'fact', 4, 0);
INSERT INTO public.legacyfx_vector_stamps VALUES ('legacy', 'test:synonyms@16', 'document', 2, 0);
INSERT INTO public.legacyfx_vector_stamps VALUES ('legacy', 'test:synonyms@16', 'graph_entity', 2, 0);


--
-- Data for Name: legacyfx_vectors; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.legacyfx_vectors VALUES ('legacy', 'entry', '01M94YFJYDP1QFH7HDFPW0C4CC', 'test:synonyms@16', '01M94YFJ95ZKKJCCMSWY86Z6XY', 16, '\x0000000000000000000000000000000000000000f5ebea3ef5eb6a3ef830303ff5eb6a3ef5eb6a3e00000000f5eb6a3ef5eb6a3e0000000000000000f5eb6a3e', 1);
INSERT INTO public.legacyfx_vectors VALUES ('legacy', 'entry', '01M94YFJZ65MHX8P56B4BT576F', 'test:synonyms@16', '01M94YFJ95ZKKJCCMSWY86Z6XY', 16, '\x00000000000000000000000000000000000000000000803e000000000000403f0000003f00000000000000000000803e00000000000000000000803e00000000', 2);
INSERT INTO public.legacyfx_vectors VALUES ('legacy', 'entry', '01M94YFJZHCC88JMEAH5ESFXDK', 'test:synonyms@16', '01M94YFJ95ZKKJCCMSWY86Z6XY', 16, '\x00000000000000000000000000000000000000000000000000000000000000000000000000000000f304353f000000000000000000000000f304353f00000000', 3);
INSERT INTO public.legacyfx_vectors VALUES ('legacy', 'entry', '01M94YFK008P59JGY5D42DV65N', 'test:synonyms@16', '01M94YFJ95ZKKJCCMSWY86Z6XY', 16, '\x000000000000000000000000000000000000000000000000000000000000803f0000000000000000000000000000000000000000000000000000000000000000', 4);
INSERT INTO public.legacyfx_vectors VALUES ('legacy', 'entry', '01M94YFK008P59JGY5D42DV65P', 'test:synonyms@16', '01M94YFJ95ZKKJCCMSWY86Z6XY', 16, '\x00000000000000000000000000000000000000000000000000000000000000000000803f00000000000000000000000000000000000000000000000000000000', 4);
INSERT INTO public.legacyfx_vectors VALUES ('legacy', 'entry', '01M94YFK0VXCVQAJZYGA6SKW5A', 'test:synonyms@16', '01M94YFJ95ZKKJCCMSWY86Z6XY', 16, '\x0000000000000000000000000000000000000000000000003acd133f0000000000000000000000003acd133f00000000000000003acd133f0000000000000000', 5);
INSERT INTO public.legacyfx_vectors VALUES ('legacy', 'entry', '01M94YFK227847Y2PYPSJ8YRRC', 'test:synonyms@16', '01M94YFK1PJFKBGAB76D2593AC', 16, '\x9be8a13e9be8a13e000000000000000000000000000000009be8213f000000009be8a13e9be8a13e00000000000000009be8a13e00000000000000009be8a13e', 6);
INSERT INTO public.legacyfx_vectors VALUES ('legacy', 'entry', '01M94YFK2PSQ9ZER35PCE8VHBE', 'test:synonyms@16', '01M94YFK2A0D0PKEZV0G9TETX0', 16, '\x0000000000000000000000000000003f00000000000000000000000000000000000000000000003f0000000000000000000000000000003f000000000000003f', 7);
INSERT INTO public.legacyfx_vectors VALUES ('legacy', 'fact', '01M94YFK35ERHMPSPSFJA3YW8N', 'test:synonyms@16', NULL, 16, '\x00000000000000000000000000000000000000000000003f000000000000000000000000000000000000003f0000003f00000000000000000000003f00000000', 2);
INSERT INTO public.legacyfx_vectors VALUES ('legacy', 'fact', '01M94YFK3XGQSAWPGS0T1QB5K9', 'test:synonyms@16', NULL, 16, '\xabaa2a3f0000000000000000000000000000000000000000abaaaa3e0000000000000000000000000000000000000000000000000000000000000000abaa2a3f', 3);
INSERT INTO public.legacyfx_vectors VALUES ('legacy', 'fact', '01M94YFK43QS1A52XPFX06XD3X', 'test:synonyms@16', NULL, 16, '\x0000000000000000000000008f84c13e000000008f84413f8f84c13e00000000000000000000000000000000000000000000000000000000000000008f84c13e', 4);
INSERT INTO public.legacyfx_vectors VALUES ('legacy', 'document', '01M94YFK4G3V705MW5CJWSCKTG', 'test:synonyms@16', NULL, 16, '\x0000000000000000000000000000000000000000ec05d13e00000000ec05d13e00000000ec05d13eec05d13e00000000ec05d13e0000000000000000ec05d13e', 1);
INSERT INTO public.legacyfx_vectors VALUES ('legacy', 'document', '01M94YFK4VJ2KV6E820NR6HK7S', 'test:synonyms@16', NULL, 16, '\x0000000000000000000000002ef9e43e000000002ef9e43e00000000000000000000000000000000000000002ef9e43e2ef9e43e000000002ef9e43e00000000', 2);
INSERT INTO public.legacyfx_vectors VALUES ('legacy', 'graph_entity', '01M94YFK5Y376KYJ61FGTCV1ZT', 'test:synonyms@16', NULL, 16, '\x0000000000000000000000000000000000000000f304353ff304353f000000000000000000000000000000000000000000000000000000000000000000000000', 1);
INSERT INTO public.legacyfx_vectors VALUES ('legacy', 'graph_entity', '01M94YFK68Z2GQ86MNS7XJMT6T', 'test:synonyms@16', NULL, 16, '\x0000000000000000000000000000000000000000000000003acd133f3acd133f0000000000000000000000003acd133f00000000000000000000000000000000', 2);


--
-- Data for Name: legacyfx_working; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Name: legacyfx_summaries_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.legacyfx_summaries_seq_seq', 2, true);


--
-- Name: legacyfx_branches legacyfx_branches_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.legacyfx_branches
    ADD CONSTRAINT legacyfx_branches_pkey PRIMARY KEY (tenant_id, thread_id, name);


--
-- Name: legacyfx_entries legacyfx_entries_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.legacyfx_entries
    ADD CONSTRAINT legacyfx_entries_pkey PRIMARY KEY (tenant_id, thread_id, branch, "position");


--
-- Name: legacyfx_records legacyfx_records_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.legacyfx_records
    ADD CONSTRAINT legacyfx_records_pkey PRIMARY KEY (tenant_id, kind, id);


--
-- Name: legacyfx_schema_version legacyfx_schema_version_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.legacyfx_schema_version
    ADD CONSTRAINT legacyfx_schema_version_pkey PRIMARY KEY (id);


--
-- Name: legacyfx_snapshots legacyfx_snapshots_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.legacyfx_snapshots
    ADD CONSTRAINT legacyfx_snapshots_pkey PRIMARY KEY (tenant_id, run_id);


--
-- Name: legacyfx_summaries legacyfx_summaries_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.legacyfx_summaries
    ADD CONSTRAINT legacyfx_summaries_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: legacyfx_threads legacyfx_threads_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.legacyfx_threads
    ADD CONSTRAINT legacyfx_threads_pkey PRIMARY KEY (tenant_id, id);


--
-- Name: legacyfx_vector_stamps legacyfx_vector_stamps_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.legacyfx_vector_stamps
    ADD CONSTRAINT legacyfx_vector_stamps_pkey PRIMARY KEY (tenant_id, model_id, kind);


--
-- Name: legacyfx_vectors legacyfx_vectors_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.legacyfx_vectors
    ADD CONSTRAINT legacyfx_vectors_pkey PRIMARY KEY (tenant_id, kind, id, model_id);


--
-- Name: legacyfx_working legacyfx_working_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.legacyfx_working
    ADD CONSTRAINT legacyfx_working_pkey PRIMARY KEY (tenant_id, run_id, key);


--
-- Name: legacyfx_entries_id; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX legacyfx_entries_id ON public.legacyfx_entries USING btree (tenant_id, thread_id, branch, id);


--
-- Name: legacyfx_entries_key; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX legacyfx_entries_key ON public.legacyfx_entries USING btree (tenant_id, thread_id, branch, idempotency_key) WHERE (idempotency_key IS NOT NULL);


--
-- Name: legacyfx_entries_scoped; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacyfx_entries_scoped ON public.legacyfx_entries USING gin (search, (ARRAY[thread_id])) WITH (gin_pending_list_limit='64');


--
-- Name: legacyfx_records_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacyfx_records_created ON public.legacyfx_records USING btree (tenant_id, kind, created_at, id);


--
-- Name: legacyfx_records_key; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacyfx_records_key ON public.legacyfx_records USING btree (tenant_id, kind, key) WHERE (key IS NOT NULL);


--
-- Name: legacyfx_records_owner; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacyfx_records_owner ON public.legacyfx_records USING btree (tenant_id, user_id);


--
-- Name: legacyfx_records_search; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacyfx_records_search ON public.legacyfx_records USING gin (search) WITH (gin_pending_list_limit='64');


--
-- Name: legacyfx_records_user; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacyfx_records_user ON public.legacyfx_records USING btree (tenant_id, kind, user_id, created_at, id);


--
-- Name: legacyfx_snapshots_user; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacyfx_snapshots_user ON public.legacyfx_snapshots USING btree (tenant_id, user_id);


--
-- Name: legacyfx_summaries_agent; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacyfx_summaries_agent ON public.legacyfx_summaries USING btree (tenant_id, agent_id, created_at, seq);


--
-- Name: legacyfx_summaries_user; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacyfx_summaries_user ON public.legacyfx_summaries USING btree (tenant_id, user_id);


--
-- Name: legacyfx_threads_owner; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacyfx_threads_owner ON public.legacyfx_threads USING btree (tenant_id, user_id);


--
-- Name: legacyfx_vectors_model; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacyfx_vectors_model ON public.legacyfx_vectors USING btree (tenant_id, model_id, kind, thread_id);


--
-- Name: legacyfx_vectors_seq; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacyfx_vectors_seq ON public.legacyfx_vectors USING btree (tenant_id, model_id, kind, seq);


--
-- Name: legacyfx_vectors_thread; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX legacyfx_vectors_thread ON public.legacyfx_vectors USING btree (tenant_id, thread_id) WHERE (thread_id IS NOT NULL);


--
-- PostgreSQL database dump complete
--

\unrestrict OrL4XfWHAF0cqCPb4kMbg0lyx1ZyKHmrzwRe22TSORci0JCNBtUwcYu13c8BOdF

