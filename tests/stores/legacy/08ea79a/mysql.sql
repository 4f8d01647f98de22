/*M!999999\- enable the sandbox mode */ 

/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
/*!40101 SET @OLD_CHARACTER_SET_RESULTS=@@CHARACTER_SET_RESULTS */;
/*!40101 SET @OLD_COLLATION_CONNECTION=@@COLLATION_CONNECTION */;
/*!40101 SET NAMES utf8mb4 */;
/*!40103 SET @OLD_TIME_ZONE=@@TIME_ZONE */;
/*!40103 SET TIME_ZONE='+00:00' */;
/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */;
/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */;
/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;
/*!40111 SET @OLD_SQL_NOTES=@@SQL_NOTES, SQL_NOTES=0 */;
DROP TABLE IF EXISTS `legacyfx_branches`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `legacyfx_branches` (
  `tenant_id` varchar(255) NOT NULL,
  `thread_id` varchar(255) NOT NULL,
  `name` varchar(255) NOT NULL,
  `created_at` bigint(20) NOT NULL,
  `from_branch` varchar(255) DEFAULT NULL,
  `from_entry` varchar(255) DEFAULT NULL,
  `last_position` bigint(20) NOT NULL,
  `entry_count` bigint(20) NOT NULL DEFAULT 0,
  PRIMARY KEY (`tenant_id`,`thread_id`,`name`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `legacyfx_branches` WRITE;
/*!40000 ALTER TABLE `legacyfx_branches` DISABLE KEYS */;
INSERT INTO `legacyfx_branches` VALUES
('legacy','01M94YFKAY2MENNMNS8Y4E0B29','alt',1793491200006000,'main','01M94YFNR2M8J6TMZMG0E2SF9J',3,3),
('legacy','01M94YFKAY2MENNMNS8Y4E0B29','main',1793491200000000,NULL,NULL,6,6),
('legacy','01M94YFP42MWQM6D0MVVM4BR6G','main',1793491200008000,NULL,NULL,1,1),
('legacy','01M94YFP4YQ0WE3H7GY69V7JH4','main',1793491200010000,NULL,NULL,1,1);
/*!40000 ALTER TABLE `legacyfx_branches` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `legacyfx_entries`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `legacyfx_entries` (
  `tenant_id` varchar(255) NOT NULL,
  `thread_id` varchar(255) NOT NULL,
  `branch` varchar(255) NOT NULL,
  `position` bigint(20) NOT NULL,
  `id` varchar(255) NOT NULL,
  `role` varchar(16) NOT NULL,
  `content` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci DEFAULT NULL,
  `name` text DEFAULT NULL,
  `tool_calls` longtext DEFAULT NULL,
  `tool_call_id` text DEFAULT NULL,
  `metadata` longtext NOT NULL,
  `state` longtext NOT NULL,
  `token_count` int(11) NOT NULL,
  `created_at` bigint(20) NOT NULL,
  `idempotency_key` text DEFAULT NULL,
  `idem_hash` bigint(20) unsigned DEFAULT NULL,
  `fingerprint` char(64) CHARACTER SET ascii COLLATE ascii_bin DEFAULT NULL,
  PRIMARY KEY (`tenant_id`,`thread_id`,`branch`,`position`),
  UNIQUE KEY `legacyfx_entries_idem` (`tenant_id`,`thread_id`,`branch`,`idem_hash`),
  KEY `legacyfx_entries_id` (`tenant_id`,`thread_id`,`id`),
  FULLTEXT KEY `legacyfx_entries_fts` (`content`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `legacyfx_entries` WRITE;
/*!40000 ALTER TABLE `legacyfx_entries` DISABLE KEYS */;
INSERT INTO `legacyfx_entries` VALUES
('legacy','01M94YFKAY2MENNMNS8Y4E0B29','alt',1,'01M94YFNQ4CN4R0H8BJZKH0C2B','user','I am flying to Lisbon in May, a window seat please',NULL,NULL,NULL,'{}','{}',16,1793491200001000,NULL,NULL,NULL),
('legacy','01M94YFKAY2MENNMNS8Y4E0B29','alt',2,'01M94YFNR2M8J6TMZMG0E2SF9J','assistant','Noted: Lisbon in May, window seat. Anything else?',NULL,NULL,NULL,'{}','{}',17,1793491200002000,NULL,NULL,NULL),
('legacy','01M94YFKAY2MENNMNS8Y4E0B29','alt',3,'01M94YFP26TX2F3C9KXKN6A2JA','user','Make it Porto',NULL,NULL,NULL,'{}','{}',7,1793491200007000,NULL,NULL,NULL),
('legacy','01M94YFKAY2MENNMNS8Y4E0B29','main',1,'01M94YFNQ4CN4R0H8BJZKH0C2B','user','I am flying to Lisbon in May, a window seat please',NULL,NULL,NULL,'{}','{}',16,1793491200001000,NULL,NULL,NULL),
('legacy','01M94YFKAY2MENNMNS8Y4E0B29','main',2,'01M94YFNR2M8J6TMZMG0E2SF9J','assistant','Noted: Lisbon in May, window seat. Anything else?',NULL,NULL,NULL,'{}','{}',17,1793491200002000,NULL,NULL,NULL),
('legacy','01M94YFKAY2MENNMNS8Y4E0B29','main',3,'01M94YFNTJDY93T4NDGRK3VRBW','assistant',NULL,NULL,'[[\"call_1\",\"book\",\"{\\\"city\\\": \\\"Lisbon\\\"}\"]]',NULL,'{}','{}',18,1793491200003000,NULL,NULL,NULL),
('legacy','01M94YFKAY2MENNMNS8Y4E0B29','main',4,'01M94YFNTR3FYCQQKSGJKW6WYE','tool','booked: LX42',NULL,NULL,'call_1','{}','{}',9,1793491200004000,NULL,NULL,NULL),
('legacy','01M94YFKAY2MENNMNS8Y4E0B29','main',5,'01M94YFNWYCYJ7NWKPXTJCKVK4','user','Thanks ü 日本 😀',NULL,NULL,NULL,'{}','{}',8,1793491200005000,'batch-1',8162183815884514882,'133e4fa652dce3b7cfe035ebfeea19914efa864bd6b048e8d370947bde919780'),
('legacy','01M94YFKAY2MENNMNS8Y4E0B29','main',6,'01M94YFNWYCYJ7NWKPXTJCKVK5','assistant','-0.0',NULL,NULL,NULL,'{}','{}',8,1793491200005000,'batch-11',5170983765980028997,'133e4fa652dce3b7cfe035ebfeea19914efa864bd6b048e8d370947bde919780'),
('legacy','01M94YFP42MWQM6D0MVVM4BR6G','main',1,'01M94YFP4EZ518TZSBCNPXZG6V','user','My car is blue and I drink chai',NULL,NULL,NULL,'{}','{}',12,1793491200009000,NULL,NULL,NULL),
('legacy','01M94YFP4YQ0WE3H7GY69V7JH4','main',1,'01M94YFP92SQZ7R3PN9HHFY1PR','system','Shared notes, no user',NULL,NULL,NULL,'{}','{}',9,1793491200011000,NULL,NULL,NULL);
/*!40000 ALTER TABLE `legacyfx_entries` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `legacyfx_records`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `legacyfx_records` (
  `tenant_id` varchar(255) NOT NULL,
  `kind` varchar(64) NOT NULL,
  `id` varchar(255) NOT NULL,
  `agent_id` varchar(255) DEFAULT NULL,
  `user_id` varchar(255) DEFAULT NULL,
  `k` varchar(255) DEFAULT NULL,
  `content` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL,
  `data` longtext NOT NULL,
  `created_at` bigint(20) NOT NULL,
  `updated_at` bigint(20) NOT NULL,
  `expires_at` bigint(20) DEFAULT NULL,
  `revision` bigint(20) NOT NULL DEFAULT 0,
  PRIMARY KEY (`tenant_id`,`kind`,`id`),
  KEY `legacyfx_records_list` (`tenant_id`,`kind`,`created_at`),
  KEY `legacyfx_records_user` (`tenant_id`,`user_id`,`kind`,`created_at`),
  KEY `legacyfx_records_key` (`tenant_id`,`kind`,`k`),
  FULLTEXT KEY `legacyfx_records_fts` (`content`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `legacyfx_records` WRITE;
/*!40000 ALTER TABLE `legacyfx_records` DISABLE KEYS */;
INSERT INTO `legacyfx_records` VALUES
('legacy','core_fact','[\"ann\", \"name\"]',NULL,'ann','name','Ann Lee','{}',1793491200018000,1793491200019000,NULL,2),
('legacy','core_fact_history','01M94YFPJT3R366QY1CHXSW0SM',NULL,'ann','[\"ann\", \"name\"]','Ann','{\"key\":\"name\"}',1793491200018000,1793491200018000,NULL,0),
('legacy','core_fact_history','01M94YFPM5ABC259AT4QE2H5AE',NULL,'ann','[\"ann\", \"name\"]','Ann Lee','{\"key\":\"name\"}',1793491200019000,1793491200019000,NULL,0),
('legacy','document','01M94YFPC0045R36B4NMYC826A',NULL,NULL,NULL,'Lisbon travel guide: trams and pastries','{\"metadata\":{\"lang\":\"en\"}}',1793491200016000,1793491200016000,NULL,0),
('legacy','document','01M94YFPD2J5451N8C1KWMTGH1',NULL,'ann',NULL,'Ann\'s passport expires 2030','{\"metadata\":{}}',1793491200017000,1793491200017000,NULL,0),
('legacy','fact','01M94YFPAECDTPNY9NE4NSQBP4',NULL,'ann',NULL,'Ann prefers aisle seats','{\"category\":\"pref\",\"confidence\":null,\"source\":null,\"metadata\":{},\"source_entries\":[],\"version\":1}',1793491200012000,1793491200013000,NULL,1),
('legacy','fact','01M94YFPBNNFQT0FEWE739E6EF',NULL,'bob',NULL,'Bob drives a blue car','{\"category\":null,\"confidence\":0.75,\"source\":\"chat\",\"metadata\":{},\"source_entries\":[],\"version\":1}',1793491200014000,1793491200014000,NULL,0),
('legacy','fact','01M94YFPBVRZM7G1JGR9JN0K26','helper',NULL,NULL,'The office opens at 9','{\"category\":null,\"confidence\":null,\"source\":null,\"metadata\":{},\"source_entries\":[],\"version\":1}',1793491200015000,1793491200015000,NULL,0),
('legacy','graph_entity','01M94YFPN7PJJRD8M9MPVYREVE',NULL,'ann',NULL,'Lisbon\nLisboa','{\"name\":\"Lisbon\",\"type\":\"city\",\"aliases\":[\"Lisboa\"],\"observations\":[],\"properties\":{},\"confidence\":1.0,\"source\":\"user\",\"obs_provenance\":{}}',1793491200020000,1793491200020000,NULL,0),
('legacy','graph_entity','01M94YFPNM2YDMG1KQ5QJSB19F',NULL,'ann',NULL,'Ann\nlikes trams','{\"name\":\"Ann\",\"type\":\"person\",\"aliases\":[],\"observations\":[\"likes trams\"],\"properties\":{},\"confidence\":1.0,\"source\":\"user\",\"obs_provenance\":{}}',1793491200021000,1793491200021000,NULL,0),
('legacy','graph_ident','[\"ident\",null,\"ann\",\"city\",\"lisbon\"]',NULL,'ann',NULL,'','{\"entity_id\":\"01M94YFPN7PJJRD8M9MPVYREVE\"}',1793491200020000,1793491200020000,NULL,0),
('legacy','graph_ident','[\"ident\",null,\"ann\",\"person\",\"ann\"]',NULL,'ann',NULL,'','{\"entity_id\":\"01M94YFPNM2YDMG1KQ5QJSB19F\"}',1793491200021000,1793491200021000,NULL,0),
('legacy','graph_in','01M94YFPQCT3ZBRWN2GGJ548CQ',NULL,'ann','01M94YFPN7PJJRD8M9MPVYREVE','','{\"source_id\":\"01M94YFPNM2YDMG1KQ5QJSB19F\",\"target_id\":\"01M94YFPN7PJJRD8M9MPVYREVE\",\"type\":\"plans_to_visit\",\"label\":null,\"weight\":1.0,\"bidirectional\":false,\"properties\":{},\"confidence\":1.0,\"source\":\"user\",\"provenance\":[],\"valid_at\":null,\"invalid_at\":null,\"expired_at\":null,\"support\":[]}',1793491200022000,1793491200023000,NULL,0),
('legacy','graph_name','[\"name\",\"01M94YFPN7PJJRD8M9MPVYREVE\",\"lisboa\"]',NULL,'ann','lisboa','','{\"entity_id\":\"01M94YFPN7PJJRD8M9MPVYREVE\"}',1793491200020000,1793491200020000,NULL,0),
('legacy','graph_name','[\"name\",\"01M94YFPN7PJJRD8M9MPVYREVE\",\"lisbon\"]',NULL,'ann','lisbon','','{\"entity_id\":\"01M94YFPN7PJJRD8M9MPVYREVE\"}',1793491200020000,1793491200020000,NULL,0),
('legacy','graph_name','[\"name\",\"01M94YFPNM2YDMG1KQ5QJSB19F\",\"ann\"]',NULL,'ann','ann','','{\"entity_id\":\"01M94YFPNM2YDMG1KQ5QJSB19F\"}',1793491200021000,1793491200021000,NULL,0),
('legacy','graph_out','01M94YFPQCT3ZBRWN2GGJ548CQ',NULL,'ann','01M94YFPNM2YDMG1KQ5QJSB19F','','{\"source_id\":\"01M94YFPNM2YDMG1KQ5QJSB19F\",\"target_id\":\"01M94YFPN7PJJRD8M9MPVYREVE\",\"type\":\"plans_to_visit\",\"label\":null,\"weight\":1.0,\"bidirectional\":false,\"properties\":{},\"confidence\":1.0,\"source\":\"user\",\"provenance\":[],\"valid_at\":null,\"invalid_at\":null,\"expired_at\":null,\"support\":[]}',1793491200022000,1793491200023000,NULL,0),
('legacy','graph_slot','[\"slot\",null,\"ann\",\"01M94YFPNM2YDMG1KQ5QJSB19F\",\"plans_to_visit\"]',NULL,'ann','01M94YFPNM2YDMG1KQ5QJSB19F','','{\"source_id\":\"01M94YFPNM2YDMG1KQ5QJSB19F\",\"type\":\"plans_to_visit\"}',1793491200023000,1793491200023000,NULL,0);
/*!40000 ALTER TABLE `legacyfx_records` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `legacyfx_schema_version`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `legacyfx_schema_version` (
  `id` tinyint(4) NOT NULL,
  `version` int(11) NOT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `legacyfx_schema_version` WRITE;
/*!40000 ALTER TABLE `legacyfx_schema_version` DISABLE KEYS */;
INSERT INTO `legacyfx_schema_version` VALUES
(1,7);
/*!40000 ALTER TABLE `legacyfx_schema_version` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `legacyfx_snapshots`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `legacyfx_snapshots` (
  `tenant_id` varchar(255) NOT NULL,
  `run_id` varchar(255) NOT NULL,
  `user_id` varchar(255) DEFAULT NULL,
  `value` longtext NOT NULL,
  `saved_at` bigint(20) NOT NULL,
  PRIMARY KEY (`tenant_id`,`run_id`),
  KEY `legacyfx_snapshots_user` (`tenant_id`,`user_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `legacyfx_snapshots` WRITE;
/*!40000 ALTER TABLE `legacyfx_snapshots` DISABLE KEYS */;
INSERT INTO `legacyfx_snapshots` VALUES
('legacy','run-ann','ann','{\"step\":3,\"todo\":[\"pack\"]}',1793491200026000),
('legacy','run-open',NULL,'{\"step\":1}',1793491200027000);
/*!40000 ALTER TABLE `legacyfx_snapshots` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `legacyfx_summaries`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `legacyfx_summaries` (
  `tenant_id` varchar(255) NOT NULL,
  `id` varchar(255) NOT NULL,
  `agent_id` varchar(255) NOT NULL,
  `user_id` varchar(255) DEFAULT NULL,
  `content` longtext NOT NULL,
  `created_at` bigint(20) NOT NULL,
  PRIMARY KEY (`tenant_id`,`id`),
  KEY `legacyfx_summaries_agent` (`tenant_id`,`agent_id`,`created_at`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `legacyfx_summaries` WRITE;
/*!40000 ALTER TABLE `legacyfx_summaries` DISABLE KEYS */;
INSERT INTO `legacyfx_summaries` VALUES
('legacy','01M94YFPR6WESXZ14VBV09PPMQ','helper','ann','Ann is planning a trip',1793491200024000),
('legacy','01M94YFPR7F0HGDWG7M7VHG9V4','helper',NULL,'Shared summary',1793491200025000);
/*!40000 ALTER TABLE `legacyfx_summaries` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `legacyfx_threads`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `legacyfx_threads` (
  `tenant_id` varchar(255) NOT NULL,
  `id` varchar(255) NOT NULL,
  `user_id` varchar(255) DEFAULT NULL,
  `agent_id` varchar(255) DEFAULT NULL,
  `title` text DEFAULT NULL,
  `metadata` longtext NOT NULL,
  `status` varchar(16) NOT NULL,
  `created_at` bigint(20) NOT NULL,
  `updated_at` bigint(20) NOT NULL,
  `current_branch` varchar(255) NOT NULL,
  PRIMARY KEY (`tenant_id`,`id`),
  KEY `legacyfx_threads_updated` (`tenant_id`,`updated_at`,`id`),
  KEY `legacyfx_threads_user` (`tenant_id`,`user_id`,`updated_at`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `legacyfx_threads` WRITE;
/*!40000 ALTER TABLE `legacyfx_threads` DISABLE KEYS */;
INSERT INTO `legacyfx_threads` VALUES
('legacy','01M94YFKAY2MENNMNS8Y4E0B29','ann','helper','Trip','{\"k\":[1]}','active',1793491200000000,1793491200007000,'main'),
('legacy','01M94YFP42MWQM6D0MVVM4BR6G','bob','helper',NULL,'{}','active',1793491200008000,1793491200009000,'main'),
('legacy','01M94YFP4YQ0WE3H7GY69V7JH4',NULL,'helper',NULL,'{}','active',1793491200010000,1793491200011000,'main');
/*!40000 ALTER TABLE `legacyfx_threads` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `legacyfx_vector_stamps`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `legacyfx_vector_stamps` (
  `tenant_id` varchar(255) NOT NULL,
  `model_id` varchar(191) NOT NULL,
  `kind` varchar(64) NOT NULL,
  `version` bigint(20) NOT NULL DEFAULT 0,
  `generation` bigint(20) NOT NULL DEFAULT 0,
  PRIMARY KEY (`tenant_id`,`model_id`,`kind`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `legacyfx_vector_stamps` WRITE;
/*!40000 ALTER TABLE `legacyfx_vector_stamps` DISABLE KEYS */;
INSERT INTO `legacyfx_vector_stamps` VALUES
('legacy','test:synonyms@16','document',2,0),
('legacy','test:synonyms@16','entry',7,0),
('legacy','test:synonyms@16','fact',4,0),
('legacy','test:synonyms@16','graph_entity',2,0);
/*!40000 ALTER TABLE `legacyfx_vector_stamps` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `legacyfx_vectors`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `legacyfx_vectors` (
  `tenant_id` varchar(255) NOT NULL,
  `kind` varchar(64) NOT NULL,
  `id` varchar(255) NOT NULL,
  `model_id` varchar(191) NOT NULL,
  `thread_id` varchar(255) DEFAULT NULL,
  `vector` mediumblob NOT NULL,
  `seq` bigint(20) NOT NULL DEFAULT 0,
  PRIMARY KEY (`tenant_id`,`kind`,`id`,`model_id`),
  KEY `legacyfx_vectors_model` (`tenant_id`,`model_id`,`kind`,`thread_id`),
  KEY `legacyfx_vectors_thread` (`tenant_id`,`thread_id`,`kind`),
  KEY `legacyfx_vectors_seq` (`tenant_id`,`model_id`,`kind`,`seq`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `legacyfx_vectors` WRITE;
/*!40000 ALTER TABLE `legacyfx_vectors` DISABLE KEYS */;
INSERT INTO `legacyfx_vectors` VALUES
('legacy','document','01M94YFPC0045R36B4NMYC826A','test:synonyms@16',NULL,0x0000000000000000000000000000000000000000EC05D13E00000000EC05D13E00000000EC05D13EEC05D13E00000000EC05D13E0000000000000000EC05D13E,1),
('legacy','document','01M94YFPD2J5451N8C1KWMTGH1','test:synonyms@16',NULL,0x0000000000000000000000002EF9E43E000000002EF9E43E00000000000000000000000000000000000000002EF9E43E2EF9E43E000000002EF9E43E00000000,2),
('legacy','entry','01M94YFNQ4CN4R0H8BJZKH0C2B','test:synonyms@16','01M94YFKAY2MENNMNS8Y4E0B29',0x0000000000000000000000000000000000000000F5EBEA3EF5EB6A3EF830303FF5EB6A3EF5EB6A3E00000000F5EB6A3EF5EB6A3E0000000000000000F5EB6A3E,1),
('legacy','entry','01M94YFNR2M8J6TMZMG0E2SF9J','test:synonyms@16','01M94YFKAY2MENNMNS8Y4E0B29',0x00000000000000000000000000000000000000000000803E000000000000403F0000003F00000000000000000000803E00000000000000000000803E00000000,2),
('legacy','entry','01M94YFNTR3FYCQQKSGJKW6WYE','test:synonyms@16','01M94YFKAY2MENNMNS8Y4E0B29',0x00000000000000000000000000000000000000000000000000000000000000000000000000000000F304353F000000000000000000000000F304353F00000000,3),
('legacy','entry','01M94YFNWYCYJ7NWKPXTJCKVK4','test:synonyms@16','01M94YFKAY2MENNMNS8Y4E0B29',0x000000000000000000000000000000000000000000000000000000000000803F0000000000000000000000000000000000000000000000000000000000000000,4),
('legacy','entry','01M94YFNWYCYJ7NWKPXTJCKVK5','test:synonyms@16','01M94YFKAY2MENNMNS8Y4E0B29',0x00000000000000000000000000000000000000000000000000000000000000000000803F00000000000000000000000000000000000000000000000000000000,4),
('legacy','entry','01M94YFP26TX2F3C9KXKN6A2JA','test:synonyms@16','01M94YFKAY2MENNMNS8Y4E0B29',0x0000000000000000000000000000000000000000000000003ACD133F0000000000000000000000003ACD133F00000000000000003ACD133F0000000000000000,5),
('legacy','entry','01M94YFP4EZ518TZSBCNPXZG6V','test:synonyms@16','01M94YFP42MWQM6D0MVVM4BR6G',0x9BE8A13E9BE8A13E000000000000000000000000000000009BE8213F000000009BE8A13E9BE8A13E00000000000000009BE8A13E00000000000000009BE8A13E,6),
('legacy','entry','01M94YFP92SQZ7R3PN9HHFY1PR','test:synonyms@16','01M94YFP4YQ0WE3H7GY69V7JH4',0x0000000000000000000000000000003F00000000000000000000000000000000000000000000003F0000000000000000000000000000003F000000000000003F,7),
('legacy','fact','01M94YFPAECDTPNY9NE4NSQBP4','test:synonyms@16',NULL,0x00000000000000000000000000000000000000000000003F000000000000000000000000000000000000003F0000003F00000000000000000000003F00000000,2),
('legacy','fact','01M94YFPBNNFQT0FEWE739E6EF','test:synonyms@16',NULL,0xABAA2A3F0000000000000000000000000000000000000000ABAAAA3E0000000000000000000000000000000000000000000000000000000000000000ABAA2A3F,3),
('legacy','fact','01M94YFPBVRZM7G1JGR9JN0K26','test:synonyms@16',NULL,0x0000000000000000000000008F84C13E000000008F84413F8F84C13E00000000000000000000000000000000000000000000000000000000000000008F84C13E,4),
('legacy','graph_entity','01M94YFPN7PJJRD8M9MPVYREVE','test:synonyms@16',NULL,0x0000000000000000000000000000000000000000F304353FF304353F000000000000000000000000000000000000000000000000000000000000000000000000,1),
('legacy','graph_entity','01M94YFPNM2YDMG1KQ5QJSB19F','test:synonyms@16',NULL,0x0000000000000000000000000000000000000000000000003ACD133F3ACD133F0000000000000000000000003ACD133F00000000000000000000000000000000,2);
/*!40000 ALTER TABLE `legacyfx_vectors` ENABLE KEYS */;
UNLOCK TABLES;
DROP TABLE IF EXISTS `legacyfx_working`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `legacyfx_working` (
  `tenant_id` varchar(255) NOT NULL,
  `run_id` varchar(255) NOT NULL,
  `k` varchar(255) NOT NULL,
  `value` longtext NOT NULL,
  PRIMARY KEY (`tenant_id`,`run_id`,`k`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;
/*!40101 SET character_set_client = @saved_cs_client */;

LOCK TABLES `legacyfx_working` WRITE;
/*!40000 ALTER TABLE `legacyfx_working` DISABLE KEYS */;
/*!40000 ALTER TABLE `legacyfx_working` ENABLE KEYS */;
UNLOCK TABLES;
/*!40103 SET TIME_ZONE=@OLD_TIME_ZONE */;

/*!40101 SET SQL_MODE=@OLD_SQL_MODE */;
/*!40014 SET FOREIGN_KEY_CHECKS=@OLD_FOREIGN_KEY_CHECKS */;
/*!40014 SET UNIQUE_CHECKS=@OLD_UNIQUE_CHECKS */;
/*!40101 SET CHARACTER_SET_CLIENT=@OLD_CHARACTER_SET_CLIENT */;
/*!40101 SET CHARACTER_SET_RESULTS=@OLD_CHARACTER_SET_RESULTS */;
/*!40101 SET COLLATION_CONNECTION=@OLD_COLLATION_CONNECTION */;
/*!40111 SET SQL_NOTES=@OLD_SQL_NOTES */;

